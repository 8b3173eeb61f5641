// Quick filters: what a user types under a column header becomes part of the server's filter
// (docs/protocol.md, The filter language), on top of the view's own filter. On a number column:
// `>10`, `>=10`, `<5`, `<=5`, `=3`, `!=3`, `10..20` or a number; elsewhere (and when a number
// column's text is none of those): rows whose text contains it, any case; `=text` for exactly that
// text (any case), `!text` for rows that do not contain it. On a number column, a comparison not
// yet finished (`>`, `<=`, `10..`) filters nothing until it is.

import { both, literal, path } from "/static/tree.js";

const COMPARISON = /^(>=|<=|!=|>|<|=)\s*(-?[\d.,_]+(?:[eE][-+]?\d+)?)$/;
const RANGE = /^(-?[\d.]+)\s*\.\.\s*(-?[\d.]+)$/;
// What a number column's box holds while a comparison is still being typed (`>`, `>=`, `-`,
// `10..`): no filter yet, rather than "the text contains >", which matches no number and would
// empty the table under the user's fingers whenever the typing pauses.
const NUMBER_SO_FAR = "-?[\\d,_]*\\.?\\d*(?:[eE][-+]?)?"; // "", "-", "1.", ".", "1e", "1e-"
const UNFINISHED = new RegExp(
  `^(?:>=|<=|!=|>|<|=|!)?\\s*${NUMBER_SO_FAR}$|^-?[\\d.]+\\s*\\.\\.?\\.?\\s*${NUMBER_SO_FAR}$`,
);

/** @param {string} text */
function number(text) {
  const value = Number(text.replace(/[,_]/g, ""));
  return Number.isFinite(value) ? value : null;
}

/** Text as a regular expression that matches it literally. @param {string} text */
function escaped(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * The filter a quick filter's text stands for ("" for none).
 * @param {string} field @param {string} text @param {string} kind  the column's kind ("number", ...)
 */
export function quickFilter(field, text, kind) {
  const typed = text.trim();
  if (typed === "") return "";
  const at = path(field);
  if (kind === "number") {
    const comparison = COMPARISON.exec(typed);
    const bound = comparison ? number(comparison[2]) : null;
    if (comparison && bound !== null) return `${at} ${comparison[1]} ${bound}`;
    const range = RANGE.exec(typed);
    const [low, high] = range ? [Number(range[1]), Number(range[2])] : [NaN, NaN];
    if (Number.isFinite(low) && Number.isFinite(high)) return `${at} BETWEEN ${low} AND ${high}`;
    const exact = number(typed);
    if (exact !== null) return `${at} = ${exact}`;
    if (UNFINISHED.test(typed)) return "";
  }
  const like = (/** @type {string} */ pattern) => `${at} LIKE ${literal(`(?i)${pattern}`)}`;
  if (typed.startsWith("=")) return like(`^${escaped(typed.slice(1))}$`);
  if (typed.startsWith("!")) return `${at} IS NULL OR ${at} NOT LIKE ${literal(`(?i)${escaped(typed.slice(1))}`)}`;
  return like(escaped(typed));
}

/** The view's filter with every quick filter added. @param {string} filter
 * @param {Record<string, string>} quick @param {(field: string) => string} kindOf */
export function withQuickFilters(filter, quick, kindOf) {
  return both(filter, ...Object.entries(quick).map(([field, text]) => quickFilter(field, text, kindOf(field))));
}
