// A view as CSV (RFC 4180): the whole view, as the server holds it, not the rows on screen.
// The records come from one `sow` with the view's filter (quick filters included) and order,
// the columns are the view's visible ones in their order.

import { download } from "/static/download.js";

/** Records asked for in one export: a view larger than this is cut, and says so. */
export const CSV_LIMIT = 1_000_000;

/** One cell: text as it is, quoted when it must be; a nested value as its JSON; a text that a
 * spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) behind a `'`.
 * @param {any} value */
export function csvCell(value) {
  if (value === null || value === undefined) return "";
  const text = typeof value === "string" ? inert(value) : typeof value === "object" ? JSON.stringify(value) : String(value);
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** A text a spreadsheet would run as a formula (`=`, `+`, `-`, `@`, a tab or a return first),
 * kept as text behind a `'`; any other as it is. @param {string} text */
export function inert(text) {
  return /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
}

/** @param {string[]} fields @param {any[]} records */
export function toCsv(fields, records) {
  const lines = [fields.map(csvCell).join(",")];
  for (const record of records) lines.push(fields.map((field) => csvCell(record?.[field])).join(","));
  return `${lines.join("\r\n")}\r\n`;
}


/**
 * Export a view: one `sow` of the whole view, written as CSV and downloaded as `<topic>.csv`.
 * ``button`` says it is under way, then how many records went out; ``failed`` is told why not.
 * @param {HTMLButtonElement} button
 * @param {{ client: any, topic: string, filter: string, orderby: string, fields: string[],
 *   failed: (reason: string) => void }} view
 */
export async function exportView(button, { client, topic, filter, orderby, fields, failed }) {
  button.disabled = true;
  button.textContent = "CSV…";
  try {
    // A million records take seconds to send: the export waits up to two minutes for them.
    const query = { filter: filter || undefined, orderby: orderby || undefined, topN: CSV_LIMIT, timeoutMs: 120_000 };
    const records = await client.sow(topic, query);
    download(toCsv(fields, records), `${topic}.csv`, "text/csv;charset=utf-8");
    button.title = `Downloaded ${records.length.toLocaleString("en-US")} records`
      + (records.length >= CSV_LIMIT ? ` (the first ${CSV_LIMIT.toLocaleString("en-US")})` : "");
  } catch (error) {
    failed(String(/** @type {any} */ (error)?.reason ?? /** @type {any} */ (error)?.message ?? error));
  } finally {
    button.disabled = false;
    button.textContent = "CSV";
  }
}
