/** The product version, from package.json (esbuild inlines just this field into each entry point). */
import { version } from '../package.json';

export const VERSION: string = version;
