/**
 * The import graph of lib/ and functions/, drawn from the sources with the TypeScript parser (type-only imports and
 * dynamic `import()` included): no file reaches itself through its imports, and no area imports an area ranked above
 * it (docs/development.md, "Layers"). A circle makes load order matter and mixes concerns that should stay apart; a
 * layer imported from below means a lower part depends on a higher one.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import * as ts from 'typescript';

const ROOT = resolve(__dirname, '../../..');

/**
 * The layers, lowest first. A file may import files of its own area and of areas on lower lines only: areas on one
 * line are peers that do not import each other. An area is a directory of lib/ or a file directly in it.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['lib/errors.ts', 'lib/json.ts', 'lib/clock.ts', 'lib/arrays.ts', 'lib/concurrency.ts', 'lib/version.ts', 'lib/powertools'],
  ['lib/logging', 'lib/aws'],
  ['lib/engine'],
  ['lib/wire'],
  ['lib/diagnostics'],
  ['lib/kube'],
  ['lib/control'],
  ['lib/store'],
  ['lib/config.ts'],
  ['lib/app.ts'],
  ['lib/http'],
  ['functions', 'lib/admission', 'lib/realtime', 'lib/console'],
  ['lib/cli', 'lib/relay', 'lib/local'],
  ['lib/demo', 'lib/entry'],
];

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return /\.tsx?$/.test(entry) && !entry.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every module specifier the file names: imports and re-exports (type-only too), `import()` calls and `import('…')` types. */
function specifiersOf(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, fileName.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined && ts.isStringLiteral(node.moduleSpecifier)) {
      found.push(node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference) && ts.isStringLiteral(node.moduleReference.expression)) {
      found.push(node.moduleReference.expression.text);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] !== undefined && ts.isStringLiteralLike(node.arguments[0])) {
      found.push(node.arguments[0].text);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push(node.argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function resolveRelative(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const base = resolve(dirname(from), specifier);
  return [base, `${base}.ts`, `${base}.tsx`, join(base, 'index.ts'), join(base, 'index.tsx')].find((path) => existsSync(path) && statSync(path).isFile());
}

/** File -> the repository's files it imports (repository-relative paths). */
function importGraph(): Map<string, string[]> {
  const files = [...sourceFiles(join(ROOT, 'lib')), ...sourceFiles(join(ROOT, 'functions'))];
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const targets = specifiersOf(file, readFileSync(file, 'utf8'))
      .map((specifier) => resolveRelative(file, specifier))
      .filter((path): path is string => path !== undefined && /\.tsx?$/.test(path))
      .map((path) => relative(ROOT, path));
    graph.set(relative(ROOT, file), [...new Set(targets)]);
  }
  return graph;
}

/** Tarjan's strongly connected components with more than one file (or a file importing itself). */
function circles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);
  return found;
}

/** One way round a circle, from its first file back to it (for the message: the files alone do not say which imports). */
function oneLoop(graph: ReadonlyMap<string, readonly string[]>, component: readonly string[]): string[] {
  const members = new Set(component);
  const start = component[0]!;
  const from = new Map<string, string>();
  const queue = [start];
  while (queue.length > 0) {
    const v = queue.shift()!;
    for (const w of graph.get(v) ?? []) {
      if (!members.has(w)) continue;
      if (w === start) {
        const path = [v];
        while (path[0] !== start) path.unshift(from.get(path[0]!)!);
        return [...path, start];
      }
      if (!from.has(w)) {
        from.set(w, v);
        queue.push(w);
      }
    }
  }
  return [start];
}

function areaOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'functions') return 'functions';
  return parts.length === 2 ? file : `${parts[0]}/${parts[1]}`;
}

const rank = new Map<string, number>(LAYERS.flatMap((areas, r) => areas.map((area): [string, number] => [area, r])));

describe('imports of lib/ and functions/', () => {
  const graph = importGraph();

  it('form no circle', () => {
    const found = circles(graph).map(
      (component) => `circle of ${component.length} files:\n    ${component.join('\n    ')}\n  for example ${oneLoop(graph, component).join(' -> ')}`,
    );
    expect(found.length === 0 ? 'no circle' : `import circles:\n  ${found.join('\n  ')}`).toBe('no circle');
  });

  it('rank every area in the layer table', () => {
    const unranked = [...new Set([...graph.keys()].map(areaOf))].filter((area) => !rank.has(area)).sort();
    expect(unranked).toEqual([]);
  });

  it('go only to the own area or one on a lower layer', () => {
    const upward: string[] = [];
    for (const [file, targets] of graph) {
      const from = areaOf(file);
      for (const target of targets) {
        const to = areaOf(target);
        if (to === from) continue;
        if ((rank.get(to) ?? Infinity) >= (rank.get(from) ?? -Infinity)) upward.push(`${file} (${from}, layer ${rank.get(from)}) -> ${target} (${to}, layer ${rank.get(to)})`);
      }
    }
    expect(upward.sort()).toEqual([]);
  });
});

/**
 * Device-kind knowledge lives in lib/engine/devices/ (docs/devices.md): the wire module, the configuration's defaults
 * and the demo's data aside, no source names a vendor's resources, annotations or request types, nor imports a kind's
 * own modules (the registry, lib/engine/devices/index.ts and words.ts, is how the rest asks the kinds).
 */
const VENDOR_ALLOWED = ['lib/engine/devices/', 'lib/wire/', 'lib/config.ts', 'lib/demo/'];
const VENDOR_TEXT = /nvidia\.com\/|aws\.amazon\.com\/|hami\.io\/node-nvidia-|hami\.io\/aws-neuron|^NVIDIA$|^AWSNeuron$/;
const VENDOR_IDENTIFIERS = new Set(['NVIDIA', 'AWS_NEURON']);

/** What in the file names a vendor: string literals and identifiers as above, imports of a kind's own modules. */
function vendorMentions(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      if (VENDOR_TEXT.test(node.text)) found.push(JSON.stringify(node.text));
    } else if (ts.isIdentifier(node) && VENDOR_IDENTIFIERS.has(node.text)) found.push(node.text);
    ts.forEachChild(node, visit);
  };
  visit(source);
  for (const specifier of specifiersOf(file, text)) {
    const target = resolveRelative(join(ROOT, file), specifier);
    if (target !== undefined && /^lib\/engine\/devices\/[^/]+\//.test(relative(ROOT, target))) found.push(`import of ${relative(ROOT, target)}`);
  }
  return [...new Set(found)];
}

describe('device-kind knowledge', () => {
  const mentions = [...importGraph().keys()]
    .filter((file) => !VENDOR_ALLOWED.some((allowed) => file.startsWith(allowed)))
    .map((file) => ({ file, names: vendorMentions(file, readFileSync(join(ROOT, file), 'utf8')) }))
    .filter(({ names }) => names.length > 0);

  it('stays in lib/engine/devices (the wire module, configuration defaults and the demo aside)', () => {
    expect(mentions.map(({ file, names }) => `${file}: ${names.join(', ')}`)).toEqual([]);
  });
});

describe('the checks themselves', () => {
  it('see every kind of import, type-only and dynamic included', () => {
    const text = [
      "import { a } from './a';",
      "import type { B } from './b';",
      "import './c';",
      "export { d } from './d';",
      "export type { E } from './e';",
      "import f = require('./f');",
      "const g = () => import('./g');",
      "type H = import('./h').H;",
      "const notAnImport = 'from ./i';",
    ].join('\n');
    expect(specifiersOf('x.ts', text)).toEqual(['./a', './b', './c', './d', './e', './f', './g', './h']);
  });

  it('find a circle through type imports and report its files', () => {
    const graph = new Map([
      ['lib/a.ts', ['lib/b.ts']],
      ['lib/b.ts', ['lib/c.ts']],
      ['lib/c.ts', ['lib/a.ts', 'lib/d.ts']],
      ['lib/d.ts', []],
      ['lib/e.ts', ['lib/e.ts']],
    ]);
    expect(circles(graph)).toEqual([['lib/a.ts', 'lib/b.ts', 'lib/c.ts'], ['lib/e.ts']]);
    expect(oneLoop(graph, ['lib/a.ts', 'lib/b.ts', 'lib/c.ts'])).toEqual(['lib/a.ts', 'lib/b.ts', 'lib/c.ts', 'lib/a.ts']);
  });

  it('see vendor names in strings and identifiers, not in comments, and imports of a kind’s own modules', () => {
    const text = [
      '// nvidia.com/gpu in a comment is no use of it',
      "const a = 'nvidia.com/gpu';",
      'const b = `${x}aws.amazon.com/neuroncore`;',
      'const c = NVIDIA;',
      "import { d } from './engine/devices/neuron/masks';",
      "import { e } from './engine/devices';",
    ].join('\n');
    expect(vendorMentions('lib/x.ts', text)).toEqual(['"nvidia.com/gpu"', '"aws.amazon.com/neuroncore"', 'NVIDIA', 'import of lib/engine/devices/neuron/masks.ts']);
  });

  it('name the area of a file', () => {
    expect([areaOf('lib/engine/devices/kind.ts'), areaOf('lib/config.ts'), areaOf('functions/filter.ts')]).toEqual(['lib/engine', 'lib/config.ts', 'functions']);
  });
});
