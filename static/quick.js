// Quick filters: what a user types above a column narrows the rows on screen, on top of the
// server's filter. On a number column: `>10`, `>=10`, `<5`, `<=5`, `=3`, `!=3`, `10..20` or a
// number; elsewhere (and when a number column's text is none of those): rows whose text contains
// it, any case; `=text` for exactly that text, `!text` for rows that do not contain it.

const COMPARISON = /^(>=|<=|!=|>|<|=)\s*(-?[\d.,_]+)$/;
const RANGE = /^(-?[\d.]+)\s*\.\.\s*(-?[\d.]+)$/;

/** @param {string} text */
function number(text) {
  const value = Number(text.replace(/[,_]/g, ""));
  return Number.isFinite(value) ? value : null;
}

/**
 * The test a quick filter's text stands for.
 * @param {string} text
 * @returns {(value: unknown) => boolean}
 */
export function quickTest(text) {
  const typed = text.trim();
  if (typed === "") return () => true;
  const comparison = COMPARISON.exec(typed);
  const bound = comparison ? number(comparison[2]) : null;
  if (comparison && bound !== null) {
    const test = {
      ">": (/** @type {number} */ v) => v > bound,
      ">=": (/** @type {number} */ v) => v >= bound,
      "<": (/** @type {number} */ v) => v < bound,
      "<=": (/** @type {number} */ v) => v <= bound,
      "=": (/** @type {number} */ v) => v === bound,
      "!=": (/** @type {number} */ v) => v !== bound,
    }[comparison[1]];
    return (value) => typeof value === "number" ? test(value) : false;
  }
  const range = RANGE.exec(typed);
  if (range) {
    const [low, high] = [Number(range[1]), Number(range[2])];
    return (value) => typeof value === "number" && value >= low && value <= high;
  }
  const exact = number(typed);
  const lower = typed.toLowerCase();
  const textOf = (/** @type {unknown} */ value) => value === null || value === undefined ? ""
    : (typeof value === "object" ? JSON.stringify(value) : String(value)).toLowerCase();
  if (lower.startsWith("=")) return (value) => textOf(value) === lower.slice(1);
  if (lower.startsWith("!")) return (value) => !textOf(value).includes(lower.slice(1));
  return (value) => (exact !== null && value === exact) || textOf(value).includes(lower);
}

/** A Tabulator headerFilterFunc that compiles each text once. */
export function quickFilterFunction() {
  let compiledFor = "";
  let test = quickTest("");
  return (/** @type {string} */ typed, /** @type {unknown} */ value) => {
    if (typed !== compiledFor) {
      compiledFor = typed;
      test = quickTest(typed);
    }
    return test(value);
  };
}
