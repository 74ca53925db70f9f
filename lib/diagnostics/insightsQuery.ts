/**
 * Just enough of the CloudWatch Logs Insights query language to list the log fields a query reads,
 * so a test can check every shipped query against the fields our log lines really carry.
 * Commands are split on `|`; string and regex literals, function names, keywords, numbers, durations
 * and `as` aliases are not fields. Backquoted names are fields. `@` fields are CloudWatch's own.
 */

const keywords = new Set(['and', 'or', 'not', 'in', 'like', 'by', 'as', 'asc', 'desc', 'is', 'null', 'true', 'false']);
// Commands whose arguments are not field expressions.
const commandsWithoutFields = new Set(['limit']);

export interface QueryFile {
  readonly name: string;
  readonly description?: string;
  readonly query: string;
}

/** A `.query` file: optional `# description` first line, then one query. Name = file name. */
export function parseQueryFile(fileName: string, content: string): QueryFile {
  const name = fileName.replace(/^.*\//, '').replace(/\.query$/, '');
  const lines = content.replace(/\r\n/g, '\n').split('\n');
  const first = lines[0]?.trim() ?? '';
  const description = first.startsWith('#') ? first.replace(/^#\s*/, '') : undefined;
  if (description !== undefined) lines.shift();
  const query = lines.join('\n').trim();
  return description === undefined ? { name, query } : { name, description, query };
}

type Token = { kind: 'word'; text: string } | { kind: 'field'; text: string } | { kind: 'pipe' } | { kind: 'open' } | { kind: 'close' } | { kind: 'other' };

function tokenize(query: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < query.length) {
    const ch = query.charAt(i);
    if (ch === '"' || ch === "'") {
      i = skipQuoted(query, i, ch);
      tokens.push({ kind: 'other' });
    } else if (ch === '/' && startsRegex(tokens)) {
      i = skipQuoted(query, i, '/');
      tokens.push({ kind: 'other' });
    } else if (ch === '`') {
      const end = query.indexOf('`', i + 1);
      if (end < 0) throw new Error(`unterminated backquote at ${i}`);
      tokens.push({ kind: 'field', text: query.slice(i + 1, end) });
      i = end + 1;
    } else if (ch === '|') {
      tokens.push({ kind: 'pipe' });
      i++;
    } else if (ch === '(' || ch === ')') {
      tokens.push({ kind: ch === '(' ? 'open' : 'close' });
      i++;
    } else if (/[0-9]/.test(ch)) {
      // Numbers and durations (5m, 1.5h) are literals.
      const match = /^[0-9][\w.]*/.exec(query.slice(i));
      i += match?.[0].length ?? 1;
      tokens.push({ kind: 'other' });
    } else if (/[@A-Za-z_]/.test(ch)) {
      const match = /^[@A-Za-z_][\w.@-]*/.exec(query.slice(i));
      const text = match?.[0] ?? ch;
      i += text.length;
      tokens.push({ kind: 'word', text });
    } else {
      if (!/\s/.test(ch)) tokens.push({ kind: 'other' });
      i++;
    }
  }
  return tokens;
}

function skipQuoted(query: string, start: number, quote: string): number {
  let i = start + 1;
  while (i < query.length) {
    const ch = query.charAt(i);
    if (ch === '\\') i += 2;
    else if (ch === quote) return i + 1;
    else i++;
  }
  throw new Error(`unterminated ${quote} literal at ${start}`);
}

// A slash starts a regex unless it follows a value (a name or a closing parenthesis): then it divides.
function startsRegex(previous: readonly Token[]): boolean {
  const last = previous[previous.length - 1];
  if (last === undefined) return true;
  if (last.kind === 'close' || last.kind === 'field') return false;
  return last.kind !== 'word' || last.text.toLowerCase() === 'like';
}

/** The fields a query reads, in order of first use, without aliases it defines itself. */
export function queryFields(query: string): string[] {
  const tokens = tokenize(query);
  const aliases = new Set<string>();
  const fields: string[] = [];
  let commandStart = true;
  let skipCommand = false;
  let command = '';
  // `parse … as a, b, c` names several fields at once: every name after its `as` is an alias.
  let parseAliases = false;
  for (let index = 0; index < tokens.length; index++) {
    const token = tokens[index];
    if (token === undefined) continue;
    if (token.kind === 'pipe') {
      commandStart = true;
      skipCommand = false;
      parseAliases = false;
      continue;
    }
    if (commandStart) {
      commandStart = false;
      if (token.kind === 'word') {
        command = token.text.toLowerCase();
        skipCommand = commandsWithoutFields.has(command);
        continue; // the command name itself
      }
    }
    if (skipCommand) continue;
    const previous = tokens[index - 1];
    const next = tokens[index + 1];
    if (token.kind === 'word') {
      const lower = token.text.toLowerCase();
      if (command === 'parse' && lower === 'as') parseAliases = true;
      if (parseAliases || (previous?.kind === 'word' && previous.text.toLowerCase() === 'as')) {
        aliases.add(token.text);
        continue;
      }
      if (keywords.has(lower) || next?.kind === 'open') continue;
    }
    if ((token.kind === 'word' || token.kind === 'field') && !aliases.has(token.text) && !fields.includes(token.text)) {
      fields.push(token.text);
    }
  }
  return fields;
}
