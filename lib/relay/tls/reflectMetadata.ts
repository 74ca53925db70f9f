/**
 * The three `Reflect` metadata functions tsyringe needs before it loads. @peculiar/x509 registers its algorithms
 * with tsyringe, and tsyringe throws at import unless a metadata polyfill (`reflect-metadata`) was loaded first.
 * That package (not a dependency here) polyfills a whole metadata API; tsyringe only stores and reads the
 * injection tokens of its own decorators (`defineMetadata`, `getOwnMetadata`) and the constructor parameter types
 * a compiler emitted (`getMetadata`; @peculiar/x509's build emits none, so it finds none). This defines exactly
 * those three, and nothing when a real polyfill is already there. Import it before @peculiar/x509.
 */

type MetadataStore = Map<unknown, unknown>;

/** The functions this installs (where `Reflect` lacks them). */
export interface MetadataReflect {
  defineMetadata?: (key: unknown, value: unknown, target: object, property?: PropertyKey) => void;
  getOwnMetadata?: (key: unknown, target: object, property?: PropertyKey) => unknown;
  getMetadata?: (key: unknown, target: object, property?: PropertyKey) => unknown;
}

const stores = new WeakMap<object, Map<PropertyKey | undefined, MetadataStore>>();

function storeOf(target: object, property: PropertyKey | undefined, create: boolean): MetadataStore | undefined {
  let byProperty = stores.get(target);
  if (byProperty === undefined) {
    if (!create) return undefined;
    byProperty = new Map();
    stores.set(target, byProperty);
  }
  let store = byProperty.get(property);
  if (store === undefined && create) {
    store = new Map();
    byProperty.set(property, store);
  }
  return store;
}

const reflect = Reflect as typeof Reflect & MetadataReflect;
if (typeof reflect.getMetadata !== 'function') {
  reflect.defineMetadata = (key, value, target, property) => {
    storeOf(target, property, true)?.set(key, value);
  };
  reflect.getOwnMetadata = (key, target, property) => storeOf(target, property, false)?.get(key);
  // As the proposal has it: own metadata first, then the prototype chain's (a subclass sees its parent's).
  reflect.getMetadata = (key, target, property) => {
    for (let at: object | null = target; at !== null; at = Object.getPrototypeOf(at) as object | null) {
      const store = storeOf(at, property, false);
      if (store?.has(key) === true) return store.get(key);
    }
    return undefined;
  };
}
