// A column's menu on the dashboard, under the ⋮ button of its header: sort by the column, group
// by it, its total and decimals when it holds numbers, whether its changes flash, move it or hide it. Each item acts on the
// panel it belongs to (static/panel.js).

import { sortOf } from "/static/settings.js";
import { path } from "/static/tree.js";

/** Open the menu of a panel's column, under its ⋮ button.
 * @param {import("/static/panel.js").Panel} panel @param {string} field @param {HTMLElement} anchor */
export function openColumnMenu(panel, field, anchor) {
  const popup = panel.$(".column-popup");
  const number = panel.columns.kind(field) === "number";
  const sort = sortOf(panel.settings.orderby);
  /** @type {[string, () => void][]} */
  const items = [
    [`${sort?.field === field && sort.dir === "asc" ? "✓ " : ""}Sort ascending`, () => { panel.settings.orderby = `${path(field)} ASC`; panel.refine(); }],
    [`${sort?.field === field && sort.dir === "desc" ? "✓ " : ""}Sort descending`, () => { panel.settings.orderby = `${path(field)} DESC`; panel.refine(); }],
    panel.settings.group.includes(field)
      ? ["Stop grouping by this column", () => panel.groupBy(panel.settings.group.filter((f) => f !== field))]
      : ["Group by this column", () => panel.groupBy([...panel.settings.group, field])],
  ];
  if (number) {
    for (const total of ["sum", "avg", "count", "none"]) {
      items.push([`${panel.columns.total(field) === total ? "✓ " : ""}Total: ${total === "avg" ? "average" : total}`, () => {
        panel.settings.totals[field] = total;
        panel.host.changed();
        if (panel.settings.group.length) panel.open();
      }]);
    }
    for (const decimals of [undefined, 0, 2, 4]) {
      items.push([`${panel.settings.decimals[field] === decimals ? "✓ " : ""}Decimals: ${decimals ?? "as the data"}`, () => {
        if (decimals === undefined) delete panel.settings.decimals[field];
        else panel.settings.decimals[field] = decimals;
        panel.columns.format(field).fixed = decimals;
        panel.grid.draw();
        panel.host.changed();
      }]);
    }
  }
  const flashing = !panel.settings.noflash.includes(field);
  items.push([`${flashing ? "✓ " : ""}Flash changes`, () => {
    panel.settings.noflash = flashing ? [...panel.settings.noflash, field] : panel.settings.noflash.filter((f) => f !== field);
    panel.host.changed();
  }]);
  items.push(
    ["Move left", () => { panel.columns.move(field, -1); panel.grid.relayout(); panel.host.changed(); }],
    ["Move right", () => { panel.columns.move(field, 1); panel.grid.relayout(); panel.host.changed(); }],
    ["Hide this column", () => panel.showColumn(field, false)],
  );
  popup.replaceChildren(...items.map(([label, action]) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = label;
    button.addEventListener("click", (event) => {
      event.stopPropagation();
      popup.hidden = true;
      action();
    });
    return button;
  }));
  const box = anchor.getBoundingClientRect();
  const frame = panel.element.getBoundingClientRect();
  popup.style.left = `${Math.max(0, Math.min(box.left - frame.left, frame.width - 200))}px`;
  popup.style.top = `${box.bottom - frame.top + 2}px`;
  popup.hidden = false;
}
