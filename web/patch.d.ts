// Types of patch.js: RFC 6902 JSON Patch.

export interface PatchOperation {
  op: "add" | "remove" | "replace" | "move" | "copy" | "test";
  path: string;
  value?: any;
  from?: string;
}

/** Apply the operations to `doc` and return the new document; `doc` is not modified. */
export declare function applyPatch<T = any>(doc: T, operations: PatchOperation[]): T;
