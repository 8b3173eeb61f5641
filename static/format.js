// How a value reads in a cell: numbers with the reader's thousands separators and a fixed number
// of decimals per column (the most the column's values have, up to 6, or set in the URL),
// negatives red, timestamps as a time of day, nested values as JSON.

const MAX_DECIMALS = 6;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** @type {Map<string, Intl.NumberFormat>} */
const numberFormats = new Map();

/** @param {number} decimals @param {boolean} grouping */
function numberFormat(decimals, grouping) {
  const name = `${decimals}:${grouping}`;
  let format = numberFormats.get(name);
  if (!format) {
    format = new Intl.NumberFormat(undefined, {
      minimumFractionDigits: decimals, maximumFractionDigits: decimals, useGrouping: grouping,
    });
    numberFormats.set(name, format);
  }
  return format;
}

const COMPUTED_DECIMALS = 2;

/**
 * The decimals `value` asks for: the digits after its point as JSON writes it, up to 6. A value
 * with more is the result of arithmetic on floats (`0.1 + 0.2` is `0.30000000000000004`), not a
 * quoted price: it asks for 2.
 * @param {number} value
 */
export function decimalsOf(value) {
  if (!Number.isFinite(value) || Number.isInteger(value)) return 0;
  const text = String(value);
  if (text.includes("e")) return COMPUTED_DECIMALS;
  const digits = text.length - text.indexOf(".") - 1;
  return digits > MAX_DECIMALS ? COMPUTED_DECIMALS : digits;
}

/** The decimals a column shows: the most its values ask for. @param {Iterable<unknown>} values */
export function inferDecimals(values) {
  let most = 0;
  for (const value of values) if (typeof value === "number") most = Math.max(most, decimalsOf(value));
  return most;
}

/** What a column holds, judged from its values: "number", "timestamp" or "text". @param {Iterable<unknown>} values */
export function kindOf(values) {
  let numbers = 0;
  let timestamps = 0;
  let others = 0;
  for (const value of values) {
    if (value === null || value === undefined || value === "") continue;
    if (typeof value === "number") numbers += 1;
    else if (typeof value === "string" && TIMESTAMP.test(value)) timestamps += 1;
    else others += 1;
  }
  if (numbers > 0 && timestamps + others === 0) return "number";
  if (timestamps > 0 && numbers + others === 0) return "timestamp";
  return "text";
}

const pad = (/** @type {number} */ n, width = 2) => String(n).padStart(width, "0");

/** A timestamp as a reader wants it: the time of day (to the millisecond when it has them) for
 * today, the date and time otherwise; in the reader's time zone when it carries one.
 * @param {string} value @param {Date} [today] */
export function formatTimestamp(value, today = new Date()) {
  const date = new Date(value.includes("T") || !value.includes(" ") ? value : value.replace(" ", "T"));
  if (Number.isNaN(date.getTime())) return value;
  const millis = /\.\d/.test(value) ? `.${pad(date.getMilliseconds(), 3)}` : "";
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}${millis}`;
  const sameDay = date.toDateString() === today.toDateString();
  return sameDay ? time : `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${time}`;
}

/**
 * The text of a number: grouped thousands (unless `plain`, for keys and ids), fixed decimals.
 * @param {number} value @param {number} decimals @param {boolean} [plain]
 */
export function formatNumber(value, decimals, plain = false) {
  if (!Number.isFinite(value)) return String(value);
  return numberFormat(decimals, !plain).format(value);
}

/** Any value as cell text. @param {unknown} value */
export function formatOther(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/**
 * How one column shows its numbers: `fixed` decimals when the URL sets them, else the most its
 * values have asked for so far (a value asking for more widens the column at the next redraw).
 */
export class ColumnFormat {
  /** @param {string} kind @param {boolean} plain @param {number} most @param {number} [fixed] */
  constructor(kind, plain, most, fixed) {
    this.kind = kind;
    this.plain = plain;
    this.most = most;
    this.fixed = fixed;
    this.widened = false;
    /** the format the user chose (static/display.js), "" for as the data says */
    this.display = "";
  }

  get decimals() {
    return this.fixed ?? this.most;
  }

  /** @param {number} value */
  saw(value) {
    if (this.fixed !== undefined) return;
    const asked = decimalsOf(value);
    if (asked > this.most) {
      this.most = asked;
      this.widened = true;
    }
  }
}

/**
 * A value as its cell reads: `text`, whether it is a negative number, and the full value as a
 * tooltip when the text shortens it (a timestamp shown as a time of day).
 * @param {ColumnFormat} column @param {unknown} value
 * @returns {{ text: string, negative: boolean, title: string }}
 */
export function cellText(column, value) {
  if (typeof value === "number") {
    column.saw(value);
    return { text: formatNumber(value, column.decimals, column.plain), negative: value < 0, title: "" };
  }
  if (column.kind === "timestamp" && typeof value === "string") {
    return { text: formatTimestamp(value), negative: false, title: value };
  }
  return { text: formatOther(value), negative: false, title: "" };
}

/** A time since, as the figures show it. */
export function formatAge(/** @type {number} */ seconds) {
  if (seconds < 60) return `${Math.floor(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  return `${Math.floor(seconds / 3600)} h`;
}

export function formatMs(/** @type {number} */ ms) {
  return ms < 10 ? `${ms.toFixed(1)} ms` : ms < 10_000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(0)} s`;
}
