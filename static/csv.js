// A view as CSV (RFC 4180): the whole view, as the server holds it, not the rows on screen.
// The records come from one `sow` with the view's filter (quick filters included) and order,
// the columns are the view's visible ones in their order.

/** Records asked for in one export: a view larger than this is cut, and says so. */
export const CSV_LIMIT = 1_000_000;

/** One cell: text as it is, quoted when it must be; a nested value as its JSON; a text that a
 * spreadsheet would run as a formula (`=`, `+`, `-`, `@` first) behind a `'`.
 * @param {any} value */
export function csvCell(value) {
  if (value === null || value === undefined) return "";
  let text = typeof value === "object" ? JSON.stringify(value) : String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** @param {string[]} fields @param {any[]} records */
export function toCsv(fields, records) {
  const lines = [fields.map(csvCell).join(",")];
  for (const record of records) lines.push(fields.map((field) => csvCell(record?.[field])).join(","));
  return `${lines.join("\r\n")}\r\n`;
}

/** Download ``text`` as ``name``. @param {string} text @param {string} name */
export function download(text, name) {
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  link.download = name;
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 1000);
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
    download(toCsv(fields, records), `${topic}.csv`);
    button.title = `Downloaded ${records.length.toLocaleString("en-US")} records`
      + (records.length >= CSV_LIMIT ? ` (the first ${CSV_LIMIT.toLocaleString("en-US")})` : "");
  } catch (error) {
    failed(String(/** @type {any} */ (error)?.reason ?? /** @type {any} */ (error)?.message ?? error));
  } finally {
    button.disabled = false;
    button.textContent = "CSV";
  }
}
