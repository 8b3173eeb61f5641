// Types of emitter.js: a tiny typed event emitter.

/** Listeners by event name; `Events` maps each name to its event's type. */
export declare class Emitter<Events extends Record<string, any> = Record<string, any>> {
  /** Listen to an event; returns the function that stops listening. */
  on<K extends keyof Events & string>(name: K, listener: (event: Events[K]) => void): () => void;
  off<K extends keyof Events & string>(name: K, listener: (event: Events[K]) => void): void;
  /** Call every listener (one that throws does not stop the others: its error is re-thrown later). */
  emit<K extends keyof Events & string>(name: K, event: Events[K]): void;
}
