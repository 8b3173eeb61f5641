// A tiny event emitter: on(name, listener) returns a function that removes the listener.

/** @template {Record<string, any>} Events */
export class Emitter {
  constructor() {
    /** @type {Map<string, Set<Function>>} */
    this._listeners = new Map();
  }

  /**
   * @param {string} name
   * @param {(event: any) => void} listener
   * @returns {() => void}
   */
  on(name, listener) {
    let listeners = this._listeners.get(name);
    if (!listeners) this._listeners.set(name, (listeners = new Set()));
    listeners.add(listener);
    return () => this.off(name, listener);
  }

  /** @param {string} name @param {Function} listener */
  off(name, listener) {
    this._listeners.get(name)?.delete(listener);
  }

  /** @param {string} name @param {any} event */
  emit(name, event) {
    for (const listener of this._listeners.get(name) ?? []) {
      try {
        listener(event);
      } catch (error) {
        // A listener's bug must not stop the others or the message stream.
        setTimeout(() => { throw error; });
      }
    }
  }
}
