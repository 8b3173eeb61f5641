// How a desk chooses to read a column: a format (percent, basis points, a currency, a time) and a
// colour rule (by sign, a scale over the rows on screen, or a threshold), per column, kept in the
// link (`format=chg:percent`, `colour=pnl:scale,qty:>1000`: static/settings.js).

import { cellText, formatNumber, formatTimestamp } from "/static/format.js";

/** The formats a column's menu offers, by name. */
export const FORMATS = /** @type {Record<string, string>} */ ({
  number: "number",
  percent: "percent",
  bps: "basis points",
  USD: "USD",
  EUR: "EUR",
  GBP: "GBP",
  time: "time",
});

/** @type {Map<string, Intl.NumberFormat>} */
const currencies = new Map();

/** @param {string} code @param {number} decimals */
function currency(code, decimals) {
  const name = `${code}:${decimals}`;
  let format = currencies.get(name);
  if (!format) {
    format = new Intl.NumberFormat(undefined, { style: "currency", currency: code, minimumFractionDigits: decimals, maximumFractionDigits: decimals });
    currencies.set(name, format);
  }
  return format;
}

/** A number as a time: milliseconds since 1970 (seconds when it is too small to be those). @param {number} value */
function asTime(value) {
  const date = new Date(Math.abs(value) < 1e11 ? value * 1000 : value);
  return Number.isNaN(date.getTime()) ? String(value) : formatTimestamp(date.toISOString());
}

/**
 * A value as its cell reads, in the column's chosen format (`display`), else as the data says
 * (format.js): its text, whether it is negative, and the full value as a tooltip.
 * @param {import("/static/format.js").ColumnFormat} column @param {unknown} value
 * @returns {{ text: string, negative: boolean, title: string }}
 */
export function cellDisplay(column, value) {
  const display = column.display;
  if (!display || display === "number" || typeof value !== "number" || !Number.isFinite(value)) {
    if (display === "time" && typeof value === "string") return { text: formatTimestamp(value), negative: false, title: value };
    return cellText(column, value);
  }
  column.saw(value);
  const negative = value < 0;
  const title = String(value);
  // The column's decimals (set, or the most its values have), less the places a scale moves the
  // point by (0.0125 is 1.25%, 125.0 bp), and at least what the format reads well with.
  const decimals = (/** @type {number} */ least, /** @type {number} */ moved) =>
    column.fixed ?? Math.max(least, column.most - moved);
  switch (display) {
    case "percent":
      return { text: `${formatNumber(value * 100, decimals(2, 2))}%`, negative, title };
    case "bps":
      return { text: `${formatNumber(value * 10_000, decimals(1, 4))} bp`, negative, title };
    case "time":
      return { text: asTime(value), negative: false, title };
    default:
      return { text: currency(display, decimals(2, 0)).format(value), negative, title };
  }
}

/**
 * A colour rule: `sign` (rises green, falls red), `scale` (a background as strong as the value
 * is large among the rows on screen, green above zero, red below), or a threshold in the quick
 * filters' words (`>1000`, `<=0`, `!=3`, `10..20`), whose cells are marked.
 * @typedef {{ kind: "sign" | "scale" } | { kind: "threshold", test: (value: number) => boolean }} ColourRule
 */

const COMPARISON = /^(>=|<=|!=|>|<|=)\s*(-?\d[\d,_]*(?:\.\d+)?)$/;
const RANGE = /^(-?\d+(?:\.\d+)?)\s*\.\.\s*(-?\d+(?:\.\d+)?)$/;

/** The rule a column's `colour` setting names; null when it names none. @param {string} text @returns {ColourRule | null} */
export function colourRule(text) {
  const typed = (text ?? "").trim();
  if (typed === "sign" || typed === "scale") return { kind: typed };
  const comparison = COMPARISON.exec(typed);
  if (comparison) {
    const bound = Number(comparison[2].replace(/[,_]/g, ""));
    const tests = /** @type {Record<string, (v: number) => boolean>} */ ({
      ">": (v) => v > bound, ">=": (v) => v >= bound, "<": (v) => v < bound,
      "<=": (v) => v <= bound, "=": (v) => v === bound, "!=": (v) => v !== bound,
    });
    return { kind: "threshold", test: tests[comparison[1]] };
  }
  const range = RANGE.exec(typed);
  if (range) {
    const [low, high] = [Number(range[1]), Number(range[2])].sort((a, b) => a - b);
    return { kind: "threshold", test: (v) => v >= low && v <= high };
  }
  return null;
}

/**
 * Colour one cell by its column's rule: classes `rule-up`, `rule-down` (by sign), `rule-hit` (a
 * threshold met), or a background for a scale, whose largest value (`largest`: of the rows on
 * screen) is the strongest.
 * @param {HTMLElement} cell @param {ColourRule | null} rule @param {unknown} value @param {number} largest
 */
export function colourCell(cell, rule, value, largest) {
  const number = typeof value === "number" && Number.isFinite(value) ? value : null;
  cell.classList.toggle("rule-up", rule?.kind === "sign" && number !== null && number > 0);
  cell.classList.toggle("rule-down", rule?.kind === "sign" && number !== null && number < 0);
  cell.classList.toggle("rule-hit", rule?.kind === "threshold" && number !== null && rule.test(number));
  if (rule?.kind === "scale" && number !== null && number !== 0 && largest > 0) {
    const strength = Math.round((Math.abs(number) / largest) * 45);
    cell.style.backgroundColor = `color-mix(in srgb, var(${number > 0 ? "--good" : "--bad"}) ${strength}%, transparent)`;
  } else if (cell.style.backgroundColor) {
    cell.style.backgroundColor = "";
  }
}
