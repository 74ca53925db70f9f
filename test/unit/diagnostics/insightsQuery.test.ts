import { parseQueryFile, queryFields } from '../../../lib/diagnostics/insightsQuery';

describe('queryFields', () => {
  it.each([
    ['fields @timestamp, message | filter v = 5 | stats count(*) as failures by message, bin(5m) | sort failures desc', ['@timestamp', 'message', 'v']],
    ['filter pod = "default/a|b" and node like /gpu-[0-9]+/ | limit 20', ['pod', 'node']],
    ['stats avg(latencyMs) / 1000 as seconds by bin(1h) | sort seconds', ['latencyMs']],
    ['filter ispresent(`device index`) or level in ["WARN", "ERROR"]', ['device index', 'level']],
    ["display a.b, @message | filter c != 'x\\'y'", ['a.b', '@message', 'c']],
    ['fields x | parse @message "* *" as left, right | filter left = "a"', ['x', '@message']],
  ])('%s', (query, expected) => {
    expect(queryFields(query)).toEqual(expected);
  });

  it('rejects an unterminated literal rather than guessing', () => {
    expect(() => queryFields('filter pod = "oops')).toThrow(/unterminated/);
  });
});

describe('parseQueryFile', () => {
  it('takes the name from the file and the optional first-line description', () => {
    expect(parseQueryFile('infra/cloudwatch/lock-contention.query', '# who holds locks\nfields node\n| limit 5\n')).toEqual({
      name: 'lock-contention',
      description: 'who holds locks',
      query: 'fields node\n| limit 5',
    });
    expect(parseQueryFile('x.query', 'fields node')).toEqual({ name: 'x', query: 'fields node' });
  });
});
