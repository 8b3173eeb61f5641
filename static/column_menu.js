// A column's menu on the dashboard, under the ⋮ button of its header: sort by the column, group
// by it; when it holds numbers, its total, decimals, format and colour rule (static/display.js),
// each a row of choices; whether its changes flash; pin, move or hide it. Each item acts on the
// panel it belongs to (static/panel.js).

import { FORMATS, colourRule } from "/static/display.js";
import { sortOf } from "/static/settings.js";
import { path } from "/static/tree.js";

/**
 * An item: a button, or a row of choices under a label (each a button named `label: choice`).
 * @typedef {[string, () => void]} Action
 * @typedef {{ label: string, choices: [string, boolean, () => void][] }} Choices
 */

/** @param {string} text @param {() => void} action @param {HTMLElement} popup @param {string} [name] */
function button(text, action, popup, name) {
  const made = document.createElement("button");
  made.type = "button";
  made.textContent = text;
  if (name) made.setAttribute("aria-label", name);
  made.addEventListener("click", (event) => {
    event.stopPropagation();
    popup.hidden = true;
    action();
  });
  return made;
}

/** Open the menu of a panel's column, under its ⋮ button.
 * @param {import("/static/panel.js").Panel} panel @param {string} field @param {HTMLElement} anchor */
export function openColumnMenu(panel, field, anchor) {
  const popup = panel.$(".column-popup");
  const { settings } = panel;
  const number = panel.columns.kind(field) === "number";
  const sort = sortOf(settings.orderby);
  /** A change of how the column reads: drawn again, kept in the link. */
  const redraw = () => { panel.grid.draw(); panel.host.changed(); };
  /** @type {(Action | Choices | HTMLElement)[]} */
  const items = [
    [`${sort?.field === field && sort.dir === "asc" ? "✓ " : ""}Sort ascending`, () => { settings.orderby = `${path(field)} ASC`; panel.refine(); }],
    [`${sort?.field === field && sort.dir === "desc" ? "✓ " : ""}Sort descending`, () => { settings.orderby = `${path(field)} DESC`; panel.refine(); }],
    settings.group.includes(field)
      ? ["Stop grouping by this column", () => panel.groupBy(settings.group.filter((f) => f !== field))]
      : ["Group by this column", () => panel.groupBy([...settings.group, field])],
  ];
  if (number) {
    items.push({ label: "Total", choices: ["sum", "avg", "count", "none"].map((total) => [total === "avg" ? "average" : total, panel.columns.total(field) === total, () => {
      settings.totals[field] = total;
      panel.host.changed();
      if (settings.group.length) panel.open();
    }]) });
    items.push({ label: "Decimals", choices: [undefined, 0, 2, 4].map((decimals) => [decimals === undefined ? "as the data" : String(decimals), settings.decimals[field] === decimals, () => {
      if (decimals === undefined) delete settings.decimals[field];
      else settings.decimals[field] = decimals;
      panel.columns.format(field).fixed = decimals;
      redraw();
    }]) });
    items.push({ label: "Format", choices: Object.entries(FORMATS).map(([name, words]) => [words, (settings.formats[field] ?? "number") === name, () => {
      if (name === "number") delete settings.formats[field];
      else settings.formats[field] = name;
      panel.columns.format(field).display = name === "number" ? "" : name;
      redraw();
    }]) });
    const rule = settings.colours[field] ?? "";
    items.push({ label: "Colour", choices: [["none", ""], ["by sign", "sign"], ["scale", "scale"]].map(([words, name]) => [words, rule === name, () => {
      if (name) settings.colours[field] = name;
      else delete settings.colours[field];
      redraw();
    }]) });
    items.push(thresholdRow(panel, field, redraw));
    const charted = settings.chart === field;
    items.push([charted ? "Stop charting this column" : "Chart this column", () => {
      settings.chart = charted ? "" : field;
      panel.host.companions(panel);
    }]);
  }
  const flashing = !settings.noflash.includes(field);
  items.push([`${flashing ? "✓ " : ""}Flash changes`, () => {
    settings.noflash = flashing ? [...settings.noflash, field] : settings.noflash.filter((f) => f !== field);
    panel.host.changed();
  }]);
  if (!panel.columns.keyFields().has(field)) {
    const pinned = settings.pin.includes(field);
    items.push([pinned ? "Unpin column" : "Pin column", () => {
      settings.pin = pinned ? settings.pin.filter((f) => f !== field) : [...settings.pin, field];
      panel.grid.relayout();
      panel.host.changed();
    }]);
  }
  items.push(
    ["Move left", () => { panel.columns.move(field, -1); panel.grid.relayout(); panel.host.changed(); }],
    ["Move right", () => { panel.columns.move(field, 1); panel.grid.relayout(); panel.host.changed(); }],
    ["Hide this column", () => panel.showColumn(field, false)],
  );
  const rows = items.map((item) => {
    if (item instanceof HTMLElement) return item;
    if (Array.isArray(item)) return button(item[0], item[1], popup);
    const row = document.createElement("div");
    row.className = "choices";
    const label = document.createElement("span");
    label.textContent = item.label;
    row.append(label, ...item.choices.map(([text, chosen, action]) => {
      const made = button(text, action, popup, `${item.label}: ${text}`);
      made.setAttribute("aria-pressed", String(chosen));
      return made;
    }));
    return row;
  });
  popup.replaceChildren(...rows);
  const box = anchor.getBoundingClientRect();
  const frame = panel.element.getBoundingClientRect();
  popup.style.left = `${Math.max(0, Math.min(box.left - frame.left, frame.width - 320))}px`;
  popup.style.top = `${box.bottom - frame.top + 2}px`;
  // Within the view (which clips what goes past its pane): a long menu in a short pane scrolls.
  popup.style.maxHeight = `${Math.max(0, frame.bottom - box.bottom - 8)}px`;
  popup.hidden = false;
}

/** A box for a threshold colour rule (`>1000`, `<0`, `10..20`): Enter marks the cells that meet it.
 * @param {import("/static/panel.js").Panel} panel @param {string} field @param {() => void} redraw */
function thresholdRow(panel, field, redraw) {
  const row = document.createElement("label");
  row.className = "choices";
  row.textContent = "Mark when";
  const input = document.createElement("input");
  input.className = "threshold";
  input.placeholder = ">1000, <0, 10..20";
  input.setAttribute("aria-label", `Mark the cells of ${field} when`);
  const rule = panel.settings.colours[field] ?? "";
  input.value = colourRule(rule)?.kind === "threshold" ? rule : "";
  input.addEventListener("keydown", (event) => {
    if (event.key !== "Enter") return;
    const typed = input.value.trim();
    if (typed !== "" && colourRule(typed)?.kind !== "threshold") {
      input.setCustomValidity("a comparison (>1000, <=0, !=3) or a range (10..20)");
      input.reportValidity();
      return;
    }
    if (typed) panel.settings.colours[field] = typed;
    else delete panel.settings.colours[field];
    panel.$(".column-popup").hidden = true;
    redraw();
  });
  input.addEventListener("input", () => input.setCustomValidity(""));
  row.append(input);
  return row;
}
