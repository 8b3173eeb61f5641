// RFC 6902 JSON Patch, applied without modifying the input: objects and arrays on the path to a
// change are copied, everything else is shared.

/** @param {string} path @returns {string[]} */
function tokens(path) {
  if (path === "") return [];
  if (!path.startsWith("/")) throw new Error(`bad JSON pointer ${path}`);
  return path.slice(1).split("/").map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** @param {any} value @returns {any} */
function copy(value) {
  return Array.isArray(value) ? value.slice() : { ...value };
}

/** @param {any} value @returns {any} */
function clone(value) {
  return value === null || typeof value !== "object" ? value : structuredClone(value);
}

/** The value at `path`, or undefined. @param {any} doc @param {string} path @returns {any} */
function get(doc, path) {
  let node = doc;
  for (const token of tokens(path)) {
    if (node === null || typeof node !== "object") return undefined;
    node = Array.isArray(node) ? node[token === "-" ? node.length : Number(token)] : node[token];
  }
  return node;
}

/**
 * `doc` with `edit(parent, token)` applied at the parent of `path` (copied on the way down).
 * @param {any} doc @param {string} path @param {(parent: any, token: string) => void} edit
 * @returns {any}
 */
function at(doc, path, edit) {
  const parts = tokens(path);
  if (parts.length === 0) throw new Error("the root is replaced, not edited");
  const root = copy(doc);
  let node = root;
  for (const token of parts.slice(0, -1)) {
    const key = Array.isArray(node) ? Number(token) : token;
    if (node[key] === null || typeof node[key] !== "object") throw new Error(`no container at ${path}`);
    node[key] = copy(node[key]);
    node = node[key];
  }
  edit(node, parts[parts.length - 1]);
  return root;
}

/** @param {any} doc @param {string} path @param {any} value @returns {any} */
function add(doc, path, value) {
  if (path === "") return clone(value);
  return at(doc, path, (parent, token) => {
    if (Array.isArray(parent)) {
      const index = token === "-" ? parent.length : Number(token);
      if (index > parent.length) throw new Error(`index ${token} out of range`);
      parent.splice(index, 0, clone(value));
    } else {
      parent[token] = clone(value);
    }
  });
}

/** @param {any} doc @param {string} path @returns {any} */
function remove(doc, path) {
  return at(doc, path, (parent, token) => {
    if (Array.isArray(parent)) parent.splice(Number(token), 1);
    else delete parent[token];
  });
}

/** @param {any} doc @param {string} path @param {any} value @returns {any} */
function replace(doc, path, value) {
  if (path === "") return clone(value);
  return at(doc, path, (parent, token) => {
    parent[Array.isArray(parent) ? Number(token) : token] = clone(value);
  });
}

/**
 * Apply RFC 6902 operations to `doc` and return the new document; `doc` is not modified.
 * @param {any} doc
 * @param {Array<{op: string, path: string, value?: any, from?: string}>} operations
 * @returns {any}
 */
export function applyPatch(doc, operations) {
  let result = doc;
  for (const operation of operations) {
    switch (operation.op) {
      case "add":
        result = add(result, operation.path, operation.value);
        break;
      case "remove":
        result = remove(result, operation.path);
        break;
      case "replace":
        result = replace(result, operation.path, operation.value);
        break;
      case "move": {
        const from = operation.from ?? "";
        const value = get(result, from);
        result = add(remove(result, from), operation.path, value);
        break;
      }
      case "copy":
        result = add(result, operation.path, get(result, operation.from ?? ""));
        break;
      case "test":
        if (JSON.stringify(get(result, operation.path)) !== JSON.stringify(operation.value)) {
          throw new Error(`test failed at ${operation.path}`);
        }
        break;
      default:
        throw new Error(`unknown patch operation ${operation.op}`);
    }
  }
  return result;
}
