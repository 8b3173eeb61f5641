// Rows that left a view, said in words: a record a change took out of the view (the server's OOF)
// leaves the table at once, and the line under it says which one went, in what state and why, for
// a few seconds. A viewport's move also sends OOFs (the rows scrolled past): those are not news.

import { pathsOf } from "/static/filter_fields.js";
import { decimalsOf, formatNumber, formatOther } from "/static/format.js";

/** How long a departure stays on the line. */
export const DEPARTURE_MS = 8000;
/** Departures shown at once (the newest first). */
const SHOWN = 3;
/** Filter fields named in the words for a record that no longer matches. */
const NAMED = 3;

/** A value in the words: numbers as the cells show them (keys without separators). @param {unknown} value */
function shown(value, plain = false) {
  if (value === undefined) return "missing";
  const text = typeof value === "number" ? formatNumber(value, decimalsOf(value), plain) : formatOther(value);
  return text === "" ? "empty" : text;
}

/**
 * What a desk reads about a record that left: which record, and why, in words. For a record that
 * no longer matches, the values it left with of the fields the view's filter names (`status is
 * now filled`): the state it left in, the reason the filter gave; of those, the ones that changed
 * when the view held the record before (`previous`), else all of them.
 * @param {{ record: any, reason?: string, previous?: any }} change  an OOF change of the view (web/view.js)
 * @param {string[]} keyFields  the topic's key fields
 * @param {string} filter  the filter the server applies (the view's, quick and linked ones)
 */
export function departureText({ record, reason, previous }, keyFields, filter) {
  const data = record && typeof record === "object" ? record : {};
  const named = keyFields.filter((field) => field in data);
  const which = named.length ? named.map((field) => `${field} ${shown(data[field], true)}`).join(", ") : "a row";
  switch (reason) {
    case "deleted":
      return `${which} was deleted`;
    case "expired":
      return `${which} expired`;
    case "entitlement":
      return `${which} is no longer yours to see`;
    default: {
      const filtered = [...pathsOf(filter)].filter((field) => !keyFields.includes(field) && field in data);
      const changed = previous ? filtered.filter((field) => JSON.stringify(previous[field]) !== JSON.stringify(data[field])) : [];
      const fields = (changed.length ? changed : filtered).slice(0, NAMED);
      const now = fields.map((field) => `${field} is now ${shown(data[field])}`);
      return now.length ? `${which} left: ${now.join(", ")}` : `${which} left: it no longer matches the filter`;
    }
  }
}

/** The line under a view's table: its latest departures, each for DEPARTURE_MS. */
export class Departures {
  /** @param {HTMLElement} element */
  constructor(element) {
    this.element = element;
    /** @type {{ text: string, reason: string, at: number }[]} newest first */
    this.recent = [];
  }

  /** @param {{ record: any, reason?: string, previous?: any }} change @param {string[]} keyFields @param {string} filter */
  add(change, keyFields, filter) {
    const text = departureText(change, keyFields, filter);
    this.recent.unshift({ text, reason: change.reason ?? "match", at: Date.now() });
    this.recent.length = Math.min(this.recent.length, SHOWN);
    this.draw();
  }

  /** Forget the departures older than DEPARTURE_MS (once a second) and those of another view. */
  draw(clear = false) {
    const now = Date.now();
    this.recent = clear ? [] : this.recent.filter((departure) => now - departure.at < DEPARTURE_MS);
    this.element.hidden = this.recent.length === 0;
    this.element.replaceChildren(
      ...this.recent.map((departure) => {
        const item = document.createElement("span");
        item.className = "departure";
        item.dataset.reason = departure.reason;
        item.textContent = departure.text;
        return item;
      }),
    );
  }
}
