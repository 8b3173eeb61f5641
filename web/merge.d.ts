// Types of merge.js: delta merging (docs/protocol.md, Publish and delta publish).

/** Objects merge field by field, arrays and scalars replace, nothing is removed; a new record. */
export declare function mergeRecord(held: Record<string, any>, delta: Record<string, any>): Record<string, any>;
