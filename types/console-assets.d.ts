/** The web console's assets, made at build time by scripts/console-assets.cjs (docs/api.md §11). */
declare module 'virtual:console-assets' {
  export const assets: readonly { readonly path: string; readonly contentType: string; readonly body: string }[];
}
