// Linked views: a view can follow the rows selected in another topic's view, filtered to the
// records whose field holds the same value (positions → that trader's orders). A link is kept in
// the view's settings as `<topic>:<field>` (the link and layouts keep it: `link=positions:trader`)
// and follows the first view open on that topic. With nothing selected there, the view shows what
// its own filters let through.

import { equals, literal, path } from "/static/tree.js";

/** @typedef {{ topic: string, field: string }} Link */

/** @param {string} text @returns {Link | null} */
export function parseLink(text) {
  const colon = text.indexOf(":");
  if (colon <= 0 || colon === text.length - 1) return null;
  return { topic: text.slice(0, colon), field: text.slice(colon + 1) };
}

/** Values a link passes on at most: a longer selection follows its first ones. */
export const LINKED_VALUES = 500;

/** The filter that holds the records whose ``field`` has a value of one of ``records``' (none:
 * no filter). A value that is an object or an array is no value to compare with: left out. A
 * missing or empty value is NULL in the filter language (IS NULL).
 * @param {string} field @param {any[]} records */
export function linkedFilter(field, records) {
  const values = new Set();
  for (const record of records) {
    const value = record?.[field];
    if (value === null || typeof value !== "object") values.add(value === "" ? null : (value ?? null));
    if (values.size >= LINKED_VALUES) break;
  }
  const scalars = [...values].filter((value) => value !== null);
  const filters = [];
  if (scalars.length === 1) filters.push(equals(field, scalars[0]));
  if (scalars.length > 1) filters.push(`${path(field)} IN (${scalars.map(literal).join(", ")})`);
  if (values.has(null)) filters.push(equals(field, null));
  return filters.length > 1 ? filters.map((filter) => `(${filter})`).join(" OR ") : (filters[0] ?? "");
}

/**
 * What the page does for links: it tells each view linked to ``source``'s topic what ``source``
 * has selected, when ``source`` is the first view open on its topic.
 * @param {any} source the panel whose selection changed
 * @param {any[]} records what it has selected
 * @param {Iterable<any>} panels every open panel, in order
 */
export function follow(source, records, panels) {
  const all = [...panels];
  const first = all.find((panel) => panel.settings.topic === source.settings.topic);
  if (first !== source) return;
  for (const panel of all) {
    const link = parseLink(panel.settings.link);
    if (panel !== source && link?.topic === source.settings.topic) panel.setLinked(linkedFilter(link.field, records));
  }
}

/** The links a view may choose: a field of another topic's view that this view has too.
 * @param {any} panel @param {Iterable<any>} panels @returns {string[]} */
export function choices(panel, panels) {
  const own = new Set(panel.columns.fields);
  const found = new Set();
  for (const other of panels) {
    if (other === panel || other.settings.topic === panel.settings.topic) continue;
    for (const field of other.columns.fields) if (own.has(field)) found.add(`${other.settings.topic}:${field}`);
  }
  return [...found].sort();
}

/** The "Linked to" choice of a view's toolbar: its options are the views open now, made again
 * when it is opened and by the returned function (the panel calls it once a second).
 * @param {any} panel @param {HTMLSelectElement} select @returns {() => void} */
export function wireLinkSelect(panel, select) {
  const fill = () => {
    if (document.activeElement === select) return; // not under the user's hand
    const options = [...new Set([...panel.host.linkChoices(panel), panel.settings.link].filter(Boolean))];
    const none = new Option("none", "");
    select.replaceChildren(none, ...options.map((choice) => new Option(choice.replace(":", " · "), choice)));
    select.value = panel.settings.link;
  };
  select.addEventListener("mousedown", fill);
  select.addEventListener("change", () => {
    panel.settings.link = select.value;
    panel.host.changed();
    panel.host.relink(panel);
  });
  fill();
  return fill;
}
