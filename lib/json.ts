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
