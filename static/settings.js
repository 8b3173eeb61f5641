// What a view looks like, kept in the page's URL so that a link reproduces the screen. Each view
// is one value of each parameter, view after view (`?topic=a&group=&topic=b&group=/sym`); a
// parameter that is empty for every view is left out. Lists are `name:value` items joined by
// commas, each part percent-encoded, so any field name survives:
//
//   orderby=/qty DESC             the server's order (docs/protocol.md, The filter language)
//   group=/desk,/sym              grouping levels, outermost first
//   columns=order,qty:90,-venue   column order, widths in px, hidden columns marked with `-`
//   totals=px:avg,qty:sum         decimals=px:2           quick=side:B,qty:%3E10
//   noflash=turnover,updated      columns whose changes do not flash
//   pin=sym,desk                  columns pinned at the left beside the key fields (always pinned)
//   format=chg:percent,px:USD     colour=pnl:scale,qty:%3E1000      (static/display.js)
//   details=1  chart=px           a detail pane, a chart of px, follow the view's selection
//   link=positions:trader         follow the rows selected in the positions view (static/links.js)
//
// Links written before viewports (`sort=qty:desc`, `group=sym`) still open as they meant.

import { FORMATS, colourRule } from "/static/display.js";

/**
 * @typedef {{ field: string, width?: number, hidden?: boolean }} ColumnSetting
 * @typedef {{
 *   topic: string, filter: string, options: string, orderby: string, group: string[],
 *   columns: ColumnSetting[], totals: Record<string, string>, decimals: Record<string, number>,
 *   quick: Record<string, string>, noflash: string[], pin: string[], link: string,
 *   formats: Record<string, string>, colours: Record<string, string>, details: boolean, chart: string,
 * }} ViewSettings
 */

export const PARAMETERS = ["topic", "filter", "options", "orderby", "group", "columns", "totals", "decimals", "quick", "noflash", "pin", "format", "colour", "details", "chart", "link"];
export const TOTALS = ["sum", "avg", "count", "none"];

/** A map by field name: without a prototype, so that a field named `constructor` or `__proto__`
 * is a field like any other. */
function byField() {
  return /** @type {Record<string, any>} */ (Object.create(null));
}

/** @param {string} topic @param {string} [filter] @param {string} [options] @returns {ViewSettings} */
export function newSettings(topic, filter = "", options = "") {
  return {
    topic, filter, options, orderby: "", group: [], columns: [], totals: byField(), decimals: byField(),
    quick: byField(), noflash: [], pin: [], formats: byField(), colours: byField(), details: false, chart: "", link: "",
  };
}

/** @param {[string, string][]} pairs */
function pack(pairs) {
  return pairs.map(([name, value]) => encodeURIComponent(name) + (value === "" ? "" : `:${encodeURIComponent(value)}`)).join(",");
}

/** @param {string} text @returns {[string, string][]} */
function unpack(text) {
  if (!text) return [];
  return text.split(",").filter(Boolean).map((item) => {
    const colon = item.indexOf(":");
    const name = colon < 0 ? item : item.slice(0, colon);
    const value = colon < 0 ? "" : item.slice(colon + 1);
    try {
      return [decodeURIComponent(name), decodeURIComponent(value)];
    } catch {
      return [name, value]; // a hand-edited link with a stray %: taken literally
    }
  });
}

/** A field named in a list of paths (`/sym`, or a name alone as older links wrote it). @param {string} item */
function fieldOf(item) {
  return item.trim().replace(/^\[?\//, "").replace(/]$/, "");
}

/** @param {ViewSettings} settings @returns {Record<string, string>} */
function encode(settings) {
  const columns = settings.columns.map((column) => /** @type {[string, string]} */ (
    [`${column.hidden ? "-" : ""}${column.field}`, column.width ? String(Math.round(column.width)) : ""]));
  return {
    topic: settings.topic,
    filter: settings.filter,
    options: settings.options,
    orderby: settings.orderby,
    group: settings.group.map((field) => `/${field}`).join(","),
    columns: pack(columns),
    totals: pack(Object.entries(settings.totals)),
    decimals: pack(Object.entries(settings.decimals).map(([field, n]) => [field, String(n)])),
    quick: pack(Object.entries(settings.quick).filter(([, text]) => text !== "")),
    noflash: pack(settings.noflash.map((field) => [field, ""])),
    pin: pack(settings.pin.map((field) => [field, ""])),
    format: pack(Object.entries(settings.formats)),
    colour: pack(Object.entries(settings.colours)),
    details: settings.details ? "1" : "",
    chart: settings.chart,
    link: settings.link,
  };
}

/** @param {Record<string, string>} values @returns {ViewSettings} */
function decode(values) {
  const settings = newSettings(values.topic, values.filter ?? "", values.options ?? "");
  settings.orderby = (values.orderby ?? "").trim();
  const [sort] = unpack(values.sort ?? "");
  if (!settings.orderby && sort) settings.orderby = `/${sort[0]} ${sort[1] === "desc" ? "DESC" : "ASC"}`;
  settings.group = (values.group ?? "").split(",").map(fieldOf).filter(Boolean);
  settings.columns = unpack(values.columns ?? "").map(([name, width]) => {
    const hidden = name.startsWith("-");
    /** @type {ColumnSetting} */
    const column = { field: hidden ? name.slice(1) : name };
    if (hidden) column.hidden = true;
    if (Number(width) > 0) column.width = Number(width);
    return column;
  });
  for (const [field, total] of unpack(values.totals ?? "")) if (TOTALS.includes(total)) settings.totals[field] = total;
  for (const [field, n] of unpack(values.decimals ?? "")) {
    const decimals = Number(n);
    if (Number.isInteger(decimals) && decimals >= 0 && decimals <= 10) settings.decimals[field] = decimals;
  }
  for (const [field, text] of unpack(values.quick ?? "")) settings.quick[field] = text;
  settings.noflash = unpack(values.noflash ?? "").map(([field]) => field);
  settings.pin = unpack(values.pin ?? "").map(([field]) => field);
  for (const [field, format] of unpack(values.format ?? "")) if (Object.hasOwn(FORMATS, format)) settings.formats[field] = format;
  for (const [field, rule] of unpack(values.colour ?? "")) if (colourRule(rule)) settings.colours[field] = rule;
  settings.link = values.link ?? "";
  settings.details = values.details === "1";
  settings.chart = values.chart ?? "";
  return settings;
}

/** A value in the query, readable where it can be: `/`, `,` and `:` mean nothing to a query. @param {string} value */
function readable(value) {
  return encodeURIComponent(value).replace(/%2F/g, "/").replace(/%2C/g, ",").replace(/%3A/g, ":");
}

/** The query string for these views. @param {ViewSettings[]} views */
export function toQuery(views) {
  const encoded = views.map(encode);
  // The first three are always written, as links made before the others existed were.
  const used = PARAMETERS.filter((name) => ["topic", "filter", "options"].includes(name)
    || encoded.some((values) => values[name]));
  const parts = [];
  for (const values of encoded) for (const name of used) parts.push(`${name}=${readable(values[name])}`);
  return parts.join("&");
}

/** The views a query string describes. @param {string} query @returns {ViewSettings[]} */
export function fromQuery(query) {
  const params = new URLSearchParams(query);
  const names = [...PARAMETERS, "sort"];
  const lists = Object.fromEntries(names.map((name) => [name, params.getAll(name)]));
  return lists.topic.flatMap((topic, index) => {
    if (!topic) return [];
    return [decode(Object.fromEntries(names.map((name) => [name, lists[name][index] ?? ""])))];
  });
}

/** The field and direction of an orderby (`/qty DESC`), when it sorts by one field. @param {string} orderby */
export function sortOf(orderby) {
  const match = orderby.trim().match(/^(\[\/[^\]]+\]|\/\S+)(\s+(ASC|DESC))?$/i);
  if (!match) return null;
  return { field: match[1].replace(/^\[?\//, "").replace(/]$/, ""), dir: /desc/i.test(match[3] ?? "") ? "desc" : "asc" };
}

/** The view's options with `timestamp` (each update then carries the server's `ts`, from which
 * the panel shows its latency); the URL and the panel's title keep the options as typed. */
export function withTimestamp(/** @type {string} */ options) {
  const list = (options || "").split(",").map((o) => o.trim()).filter(Boolean);
  if (!list.includes("timestamp")) list.push("timestamp");
  return list.join(",");
}
