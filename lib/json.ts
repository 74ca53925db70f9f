/**
 * Reading JSON of unknown shape (Kubernetes objects as they arrive): an object is a plain object, never an array or
 * null. Free of any import, for every bundle.
 */
export type JsonObject = Record<string, unknown>;

export function isJsonObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `obj[key]` when both are objects, else an empty object (a missing part reads as empty). */
export function objectField(obj: unknown, key: string): JsonObject {
  if (!isJsonObject(obj)) return {};
  const value = obj[key];
  return isJsonObject(value) ? value : {};
}

/**
 * Whether `value` nests objects or arrays more than `limit` levels deep (a scalar is 0 levels, `{}` and `[]` are 1).
 * Walks with its own stack, never the call stack, so any depth JSON.parse can build (V8's parser does not recurse
 * either) is measured without overflowing; stops at the first level past the limit.
 */
export function nestingExceeds(value: unknown, limit: number): boolean {
  const pending: { readonly value: unknown; readonly depth: number }[] = [{ value, depth: 0 }];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (next.value === null || typeof next.value !== 'object') continue;
    const depth = next.depth + 1;
    if (depth > limit) return true;
    for (const child of Object.values(next.value)) pending.push({ value: child, depth });
  }
  return false;
}
