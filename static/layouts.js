// Layouts a desk keeps: the views open and how their panes stand, saved under a name in this
// browser (localStorage) and exported to or imported from a file, besides the link (which keeps
// the views, and opens them in the workspace's own arrangement).
//
// A layout is JSON: { format: "sowpush layout", version: 1, query, panes, arrangement }. `query`
// is the views as the link writes them (static/settings.js), `panes` the pane of each of those
// views in order, `arrangement` how the panes stand (dockview-core's own form: static/workspace.js).

import { download } from "/static/download.js";

const STORE = "sowpush-layouts";
export const FORMAT = "sowpush layout";

/** @typedef {{ format: string, version: number, query: string, panes: string[], arrangement: any }} Layout */

/** The kinds of companion pane a view may have beside it (static/companions.js). */
export const COMPANIONS = ["details", "chart"];

/** A view's companion pane's id: its own pane's, marked by the kind. An arrangement may hold one
 * of each kind beside any of its views' panes. @param {string} id @param {string} kind */
export const companionId = (id, kind) => `${id}-${kind}`;

/** The ids a layout's companion panes may have. @param {string[]} panes */
export function companionIds(panes) {
  return new Set(panes.flatMap((pane) => COMPANIONS.map((kind) => companionId(pane, kind))));
}

/** ``text`` read as a layout, or an Error that says what is wrong with it. @returns {Layout} */
export function parseLayout(/** @type {string} */ text) {
  let layout;
  try {
    layout = JSON.parse(text);
  } catch {
    throw new Error("this file is not JSON");
  }
  if (layout?.format !== FORMAT) throw new Error(`this file is not a ${FORMAT} (no "format": "${FORMAT}")`);
  if (layout.version !== 1) throw new Error(`this layout has version ${layout.version}; this dashboard reads version 1`);
  const panels = layout.arrangement?.panels;
  const valid = typeof layout.query === "string" && Array.isArray(layout.panes) && layout.arrangement?.grid
    && panels && typeof panels === "object";
  if (!valid) throw new Error("this layout lacks its views or its arrangement");
  if (!layout.panes.every((/** @type {unknown} */ id) => typeof id === "string" && /^view-\d{1,9}$/.test(id))) {
    throw new Error("this layout's panes are not named view-1, view-2, ...");
  }
  const ids = Object.keys(panels);
  const companions = companionIds(layout.panes);
  const views = ids.filter((id) => !companions.has(id)).sort();
  if (JSON.stringify(views) !== JSON.stringify([...layout.panes].sort())) {
    throw new Error("this layout's panes are not the panes of its arrangement");
  }
  return layout;
}

/** The layouts saved in this browser, by name. @returns {Record<string, Layout>} */
export function savedLayouts() {
  // Without a prototype: a layout named "__proto__" or "constructor" is a layout like any other.
  const all = Object.create(null);
  try {
    const stored = JSON.parse(localStorage.getItem(STORE) ?? "{}");
    if (stored && typeof stored === "object" && !Array.isArray(stored)) Object.assign(all, stored);
  } catch {
    // Unreadable (edited by hand): as if none were saved; the next save writes it afresh.
  }
  return all;
}

function keep(/** @type {Record<string, Layout>} */ all) {
  localStorage.setItem(STORE, JSON.stringify(all));
}

/**
 * The layouts menu in the bar: save the screen under a name, open or delete a saved layout, export
 * the screen to a file, import one.
 * @param {HTMLElement} root
 * @param {{ capture: () => Layout, open: (layout: Layout) => void }} page
 */
export function layoutMenu(root, page) {
  const $ = (/** @type {string} */ selector) => /** @type {HTMLElement} */ (root.querySelector(selector));
  const message = $(".layout-message");
  const say = (/** @type {string} */ text, failed = false) => {
    message.textContent = text;
    message.classList.toggle("failed", failed);
  };
  const list = () => {
    const all = savedLayouts();
    const names = Object.keys(all).sort((a, b) => a.localeCompare(b));
    $(".saved-layouts").replaceChildren(...names.map((name) => {
      const item = document.createElement("li");
      const open = document.createElement("button");
      open.type = "button";
      open.className = "open-layout";
      open.textContent = name;
      open.title = `Open the layout "${name}" in place of the views open now`;
      open.addEventListener("click", () => {
        try {
          page.open(parseLayout(JSON.stringify(savedLayouts()[name])));
          say(`opened "${name}"`);
          /** @type {HTMLDetailsElement} */ (root).open = false;
        } catch (error) {
          say(`cannot open "${name}": ${/** @type {Error} */ (error).message}`, true);
        }
      });
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "delete-layout";
      remove.textContent = "×";
      remove.title = `Delete the layout "${name}" from this browser`;
      remove.setAttribute("aria-label", remove.title);
      remove.addEventListener("click", () => {
        const kept = savedLayouts();
        delete kept[name];
        keep(kept);
        list();
        say(`deleted "${name}"`);
      });
      item.append(open, remove);
      return item;
    }));
    $(".no-layouts").hidden = names.length > 0;
  };
  const input = /** @type {HTMLInputElement} */ ($(".save-layout input"));
  const save = () => {
    const name = input.value.trim();
    if (!name) return;
    const all = savedLayouts();
    const replaced = Object.hasOwn(all, name);
    all[name] = page.capture();
    keep(all);
    input.value = "";
    list();
    say(replaced ? `saved "${name}" over the one before` : `saved "${name}" in this browser`);
  };
  // Not a form: the page's form (open a view) keeps the page's only submit button.
  $(".save-layout button").addEventListener("click", save);
  input.addEventListener("keydown", (event) => { if (event.key === "Enter") save(); });
  $(".export-layout").addEventListener("click", () => {
    download(JSON.stringify(page.capture(), null, 2), "layout.sowpush.json", "application/json");
  });
  const file = /** @type {HTMLInputElement} */ ($(".import-layout input"));
  file.addEventListener("change", async () => {
    const chosen = file.files?.[0];
    file.value = "";
    if (!chosen) return;
    try {
      page.open(parseLayout(await chosen.text()));
      say(`opened ${chosen.name}: save it under a name to keep it here`);
    } catch (error) {
      say(`cannot open ${chosen.name}: ${/** @type {Error} */ (error).message}`, true);
    }
  });
  root.addEventListener("toggle", () => { if (/** @type {HTMLDetailsElement} */ (root).open) list(); });
  list();
}
