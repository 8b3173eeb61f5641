// The workspace: the dashboard's views as the panes of a docking layout (dockview-core, vendored in
// static/vendor/dockview-core). Panes share the screen between them, so views never overlap however
// many are open. A pane is resized by its edges; dragged by its tab beside, above or below another,
// or onto it as a tab; maximised (the button at its tab bar's right, or a double click on its tab)
// and restored; closed from its tab or the view's own ×.

const { createDockview, themeLight } = /** @type {any} */ (globalThis)["dockview-core"];

/** The shape a pane is given when views open: wider than tall, as a table reads best. */
const PANE_ASPECT = 1.6;

/**
 * What the workspace tells the page.
 * @typedef {{ closed: (id: string) => void }} WorkspaceHost
 */

export class Workspace {
  /** @param {HTMLElement} element @param {WorkspaceHost} host */
  constructor(element, host) {
    this.element = element;
    /** @type {Map<string, HTMLElement>} each pane's content: a box its view is put in */
    this.contents = new Map();
    this.api = createDockview(element, {
      // The layout's own rules (sizes, tabs, drop targets); its colours are the page's (styles.css).
      theme: themeLight,
      // A view behind another tab stays in the page, hidden: its table keeps its place and columns.
      defaultRenderer: "always",
      createComponent: (/** @type {{ id: string }} */ { id }) => ({ element: this.content(id), init() {} }),
      createRightHeaderActionComponent: () => maximiseButton(),
      createWatermarkComponent: () => emptyWorkspace(),
    });
    this.api.onDidRemovePanel((/** @type {{ id: string }} */ pane) => {
      this.contents.delete(pane.id);
      host.closed(pane.id);
    });
    element.addEventListener("dblclick", (event) => {
      const tab = /** @type {HTMLElement} */ (event.target).closest(".dv-tab");
      if (tab) this.toggleMaximised();
    });
  }

  /** A pane for ``element``. While the panes stand in columns (as views open them), the columns
   * and the panes in each share the workspace evenly, as many columns as keep each pane about
   * PANE_ASPECT wide; once a user has arranged them otherwise, the new one splits the largest. */
  add(/** @type {string} */ id, /** @type {string} */ title, /** @type {HTMLElement} */ element) {
    this.content(id).append(element);
    if (this.api.hasMaximizedGroup()) this.api.exitMaximizedGroup(); // a new view is seen at once
    const columns = columnsOf(this.api.groups);
    /** @type {any} */
    let position;
    if (columns === null) {
      const largest = largestGroup(this.api.groups);
      const direction = largest.api.width >= PANE_ASPECT * largest.api.height ? "right" : "below";
      position = { referenceGroup: largest, direction };
    } else if (columns.length > 0) {
      // The element's size, not the layout's: that one is learnt from a ResizeObserver, later.
      const wanted = columnCount(this.api.groups.length + 1, this.element.clientWidth, this.element.clientHeight);
      const shortest = columns.reduce((a, b) => (b.length < a.length ? b : a));
      position = columns.length < wanted ? { direction: "right" } : { referenceGroup: shortest.at(-1), direction: "below" };
    }
    this.api.addPanel({ id, component: "view", title, ...(position ? { position } : {}) });
    this.tooltip(id, title);
    if (columns !== null) this.balance();
  }

  /** Columns of equal width, and in each column panes of equal height. */
  balance() {
    const columns = columnsOf(this.api.groups) ?? [];
    const { clientWidth: width, clientHeight: height } = this.element;
    for (const column of columns.slice(0, -1)) column[0].api.setSize({ width: width / columns.length });
    for (const column of columns) {
      for (const group of column.slice(0, -1)) group.api.setSize({ height: height / column.length });
    }
  }

  /** The box pane ``id`` shows (a view goes in it, before or after the pane is laid out). */
  content(/** @type {string} */ id) {
    let box = this.contents.get(id);
    if (!box) {
      box = document.createElement("div");
      box.className = "pane-content";
      this.contents.set(id, box);
    }
    return box;
  }

  /** How the panes stand: which where, at what size (dockview's own form of it). */
  arrangement() {
    return this.api.toJSON();
  }

  /** The panes of ``arrangement`` in place of every pane there is: empty, for views to be put in
   * (``fill``). Throws when dockview cannot read it. */
  arrange(/** @type {any} */ arrangement) {
    this.api.fromJSON(arrangement);
  }

  /** Put ``element`` in pane ``id`` of an arrangement. */
  fill(/** @type {string} */ id, /** @type {HTMLElement} */ element) {
    this.content(id).append(element);
  }

  /** The ids of the panes there are. @returns {string[]} */
  ids() {
    return this.api.panels.map((/** @type {{ id: string }} */ pane) => pane.id);
  }

  /** Close ``id``'s pane (its view closed itself); nothing when it is gone already. */
  remove(/** @type {string} */ id) {
    const pane = this.api.getPanel(id);
    if (pane) this.api.removePanel(pane);
  }

  setTitle(/** @type {string} */ id, /** @type {string} */ title) {
    this.api.getPanel(id)?.api.setTitle(title);
    this.tooltip(id, title);
  }

  /** The whole title on the tab's tooltip: a narrow pane's tab cuts it short. */
  tooltip(/** @type {string} */ id, /** @type {string} */ title) {
    const tab = this.api.getPanel(id)?.view?.tab?.element;
    if (tab instanceof HTMLElement) tab.title = title;
  }

  /** The active pane's group fills the workspace, or, when one does, every pane shows again. */
  toggleMaximised() {
    if (this.api.hasMaximizedGroup()) this.api.exitMaximizedGroup();
    else if (this.api.activePanel) this.api.maximizeGroup(this.api.activePanel);
  }
}

/** @param {any[]} groups */
function largestGroup(groups) {
  let largest = groups[0];
  for (const group of groups) {
    if (group.api.width * group.api.height > largest.api.width * largest.api.height) largest = group;
  }
  return largest;
}

/** The groups as columns, left to right, each top to bottom; null when they do not stand in
 * columns (a pane spans two, as a user may arrange them). @param {any[]} groups @returns {any[][] | null} */
function columnsOf(groups) {
  /** @type {Map<number, { width: number, groups: { group: any, top: number }[] }>} */
  const columns = new Map();
  for (const group of groups) {
    const { left, top, width } = group.element.getBoundingClientRect();
    const column = columns.get(Math.round(left)) ?? { width: Math.round(width), groups: [] };
    if (column.width !== Math.round(width)) return null;
    column.groups.push({ group, top });
    columns.set(Math.round(left), column);
  }
  return [...columns.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, column]) => column.groups.sort((a, b) => a.top - b.top).map(({ group }) => group));
}

/** How many columns ``count`` panes stand in, so that each is closest to PANE_ASPECT. */
function columnCount(/** @type {number} */ count, /** @type {number} */ width, /** @type {number} */ height) {
  let best = 1;
  let bestMiss = Infinity;
  for (let columns = 1; columns <= count; columns++) {
    const rows = Math.ceil(count / columns);
    const miss = Math.abs(Math.log((width / columns) / (height / rows) / PANE_ASPECT));
    if (miss < bestMiss) [best, bestMiss] = [columns, miss];
  }
  return best;
}

/** What an empty workspace shows: how to open a view. */
function emptyWorkspace() {
  const element = document.createElement("div");
  element.className = "empty-workspace";
  const title = document.createElement("b");
  title.textContent = "No view open";
  const how = document.createElement("span");
  how.textContent = "Click a topic on the left to see all its records, or type a topic and a filter "
    + "above and press Open view. The layouts menu opens a layout saved before.";
  element.append(title, how);
  return { element, init() {}, dispose() {} };
}

/** The button at the right of a tab bar: maximise that pane's group, or restore the layout. */
function maximiseButton() {
  const element = document.createElement("div");
  element.className = "pane-actions";
  const button = document.createElement("button");
  button.type = "button";
  button.className = "maximise";
  element.append(button);
  /** @type {{ dispose: () => void }[]} */
  const listeners = [];
  return {
    element,
    init(/** @type {{ api: any, containerApi: any }} */ { api, containerApi }) {
      const show = () => {
        const maximised = api.isMaximized();
        button.textContent = maximised ? "⤡" : "⤢";
        button.title = maximised ? "Restore the layout" : "Maximise this pane";
        button.setAttribute("aria-label", button.title);
        button.setAttribute("aria-pressed", String(maximised));
      };
      button.addEventListener("click", () => {
        if (api.isMaximized()) api.exitMaximized();
        else api.maximize();
      });
      listeners.push(containerApi.onDidMaximizedGroupChange(show));
      show();
    },
    dispose() {
      listeners.forEach((listener) => listener.dispose());
    },
  };
}
