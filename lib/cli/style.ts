/** Terminal styling: ANSI colour only on a TTY and when NO_COLOR is unset (https://no-color.org). */

export type Tone = 'good' | 'bad' | 'warn' | 'strong' | 'dim';

export interface Styler {
  (tone: Tone, text: string): string;
}

const codes: Readonly<Record<Tone, [number, number]>> = {
  good: [32, 39],
  bad: [31, 39],
  warn: [33, 39],
  strong: [1, 22],
  dim: [2, 22],
};

export const plain: Styler = (_tone, text) => text;
export const ansi: Styler = (tone, text) => (text === '' ? text : `\u001b[${codes[tone][0]}m${text}\u001b[${codes[tone][1]}m`);

export function shouldUseColour(isTTY: boolean, env: Readonly<Record<string, string | undefined>>): boolean {
  return isTTY && (env.NO_COLOR === undefined || env.NO_COLOR === '');
}

/** The tone of a status word as the scheduler log uses them. */
export function statusTone(status: string): Tone {
  switch (status) {
    case 'passed':
    case 'succeeded':
    case 'yes':
      return 'good';
    case 'failed':
    case 'no':
      return 'bad';
    default:
      return 'warn';
  }
}

export interface Cell {
  readonly text: string;
  readonly tone?: Tone;
}

/** Left-aligned columns sized on the plain text, so colour never breaks alignment. */
export function table(header: readonly string[], rows: readonly (readonly Cell[])[], style: Styler, indent = '  '): string[] {
  const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]?.text.length ?? 0)));
  const line = (cells: readonly Cell[]) =>
    (
      indent +
      cells
        .map((cell, column) => {
          const padding = ' '.repeat((widths[column] ?? 0) - cell.text.length);
          const text = cell.tone ? style(cell.tone, cell.text) : cell.text;
          return column === cells.length - 1 ? text : text + padding;
        })
        .join('  ')
    ).trimEnd();
  return [line(header.map((title) => ({ text: title, tone: 'strong' }))), ...rows.map(line)];
}

/** Help text's option list: each flag padded to the longest, its description after (continuation lines aligned). */
export function optionList(options: readonly (readonly [flag: string, text: string])[]): string {
  const width = Math.max(...options.map(([flag]) => flag.length)) + 2;
  return options.map(([flag, text]) => `  ${flag.padEnd(width)}${text.split('\n').join(`\n  ${' '.repeat(width)}`)}`).join('\n');
}
