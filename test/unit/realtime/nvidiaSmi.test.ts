import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  buildRealtimeAnnotation,
  COMPUTE_APPS_QUERY_ARGS,
  GPU_QUERY_ARGS,
  NvidiaSmiOutputError,
  parseComputeApps,
  parseGpuQuery,
  serializeRealtimeAnnotation,
} from '../../../lib/realtime/nvidiaSmi';
import { parseRealtimeReport } from '../../../lib/engine/registration';
import { REALTIME_ANNOTATION } from '../../../lib/wire/realtime';

const fixture = (name: string): string => readFileSync(join(__dirname, '../../fixtures/nvidia-smi', name), 'utf8');
const errorOf = (fn: () => unknown): unknown => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
};
const NOW = Date.parse('2025-03-14T09:26:53.000Z');

describe('nvidia-smi query arguments', () => {
  it('ask for exactly the documented fields, without header or units', () => {
    expect(GPU_QUERY_ARGS).toEqual([
      '--query-gpu=uuid,index,memory.used,memory.total,utilization.gpu',
      '--format=csv,noheader,nounits',
    ]);
    expect(COMPUTE_APPS_QUERY_ARGS).toEqual([
      '--query-compute-apps=gpu_uuid,pid,used_memory',
      '--format=csv,noheader,nounits',
    ]);
  });
});

describe('parseGpuQuery on recorded outputs', () => {
  it('reads one card', () => {
    expect(parseGpuQuery(fixture('gpu-one-a100-40gb.csv'))).toEqual({
      cards: [
        { uuid: 'GPU-8f3c2b1e-5d4a-4e7b-9c21-0a6d3e5f7b92', index: 0, usedMemMB: 2048, totalMemMB: 40960, utilization: 45 },
      ],
      errors: [],
    });
  });

  it('reads eight cards in index order with their own figures', () => {
    const { cards, errors } = parseGpuQuery(fixture('gpu-eight-h100-80gb.csv'));
    expect(errors).toEqual([]);
    expect(cards.map((c) => c.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(cards.every((c) => c.totalMemMB === 81559)).toBe(true);
    expect(cards.map((c) => c.usedMemMB)).toEqual([71682, 71682, 40120, 4, 4, 20486, 81290, 516]);
    expect(cards.map((c) => c.utilization)).toEqual([98, 97, 63, 0, 0, 12, 100, 0]);
    expect(cards[6]?.uuid).toBe('GPU-7bbede8a-9caf-4aef-bcd7-5e8f6adb1b97');
  });

  it('leaves out cards with an error field, says why per card, and keeps the healthy ones', () => {
    const { cards, errors } = parseGpuQuery(fixture('gpu-four-a100-80gb-with-errors.csv'));
    expect(cards.map((c) => c.uuid)).toEqual([
      'GPU-a1f0c3d2-1e2b-4c3d-9e4f-5a6b7c8d9e01',
      'GPU-c3d2e5f4-3a4d-4e5f-9a6b-7c8d9e0f1a23',
    ]);
    // MIG mode: memory is real, utilization unavailable, so the card stays without a utilization figure.
    expect(cards[1]).toEqual({ uuid: 'GPU-c3d2e5f4-3a4d-4e5f-9a6b-7c8d9e0f1a23', index: 2, usedMemMB: 10240, totalMemMB: 81920 });
    expect(errors).toEqual([
      {
        line: 2,
        uuid: 'GPU-b2e1d4c3-2f3c-4d4e-8f5a-6b7c8d9e0f12',
        index: 1,
        field: 'memory.used',
        value: '[Unknown Error]',
        message: 'nvidia-smi reported [Unknown Error]',
      },
      {
        line: 4,
        uuid: 'GPU-d4c3f6a5-4b5e-4f6a-8b7c-8d9e0f1a2b34',
        index: 3,
        field: 'memory.used',
        value: '[GPU requires reset]',
        message: 'nvidia-smi reported [GPU requires reset]',
      },
    ]);
  });

  it('reads empty output as no cards', () => {
    expect(parseGpuQuery(fixture('gpu-empty.csv'))).toEqual({ cards: [], errors: [] });
    expect(parseGpuQuery('\n  \r\n')).toEqual({ cards: [], errors: [] });
  });

  it('tolerates CRLF, padded cells and blank lines', () => {
    expect(parseGpuQuery(fixture('gpu-crlf-padded.csv')).cards).toEqual([
      { uuid: 'GPU-e5b4a7f6-5c6f-4a7b-9c8d-9e0f1a2b3c45', index: 0, usedMemMB: 15360, totalMemMB: 24576, utilization: 7 },
      { uuid: 'GPU-f6a5b8a7-6d7a-4b8c-8d9e-0f1a2b3c4d56', index: 1, usedMemMB: 0, totalMemMB: 24576, utilization: 0 },
    ]);
  });

  it('refuses the driver-not-loaded message as output of the wrong shape', () => {
    expect(() => parseGpuQuery(fixture('gpu-driver-not-loaded.txt'))).toThrow(NvidiaSmiOutputError);
  });
});

describe('parseGpuQuery field by field', () => {
  const uuid = 'GPU-8f3c2b1e-5d4a-4e7b-9c21-0a6d3e5f7b92';
  it.each([
    ['[N/A]', `${uuid}, 0, 100, 1000, [N/A]`],
    ['[Not Supported]', `${uuid}, 0, 100, 1000, [Not Supported]`],
  ])('keeps a card whose utilization is %s, without a utilization figure', (_marker, line) => {
    expect(parseGpuQuery(line)).toEqual({ cards: [{ uuid, index: 0, usedMemMB: 100, totalMemMB: 1000 }], errors: [] });
  });

  it.each([
    ['[Unknown Error] utilization', `${uuid}, 0, 100, 1000, [Unknown Error]`, 'utilization.gpu'],
    ['utilization above 100', `${uuid}, 0, 100, 1000, 101`, 'utilization.gpu'],
    ['[N/A] used memory', `${uuid}, 0, [N/A], 1000, 5`, 'memory.used'],
    ['[Not Supported] total memory', `${uuid}, 0, 100, [Not Supported], 5`, 'memory.total'],
    ['fractional memory', `${uuid}, 0, 100.5, 1000, 5`, 'memory.used'],
    ['negative memory', `${uuid}, 0, -1, 1000, 5`, 'memory.used'],
    ['zero total memory', `${uuid}, 0, 0, 0, 5`, 'memory.total'],
    ['used above total', `${uuid}, 0, 1001, 1000, 5`, 'memory.used'],
    ['an unreadable index', `${uuid}, [N/A], 100, 1000, 5`, 'index'],
  ])('drops a card with %s and names the field', (_name, line, field) => {
    const { cards, errors } = parseGpuQuery(line);
    expect(cards).toEqual([]);
    expect(errors).toEqual([expect.objectContaining({ uuid, field, line: 1 })]);
  });

  it.each([
    ['too few columns', `${uuid}, 0, 100, 1000`, 1],
    ['too many columns', `${uuid}, 0, 100, 1000, 5, 7`, 1],
    ['a header line', 'uuid, index, memory.used [MiB], memory.total [MiB], utilization.gpu [%]', 1],
    ['a first column that is not a UUID', `${uuid}, 0, 100, 1000, 5\nfoo, 1, 100, 1000, 5`, 2],
    ['the same card twice', `${uuid}, 0, 100, 1000, 5\n${uuid}, 1, 100, 1000, 5`, 2],
  ])('refuses the whole output on %s, naming the line', (_name, text, line) => {
    const thrown = errorOf(() => parseGpuQuery(text));
    expect(thrown).toBeInstanceOf(NvidiaSmiOutputError);
    expect(thrown).toMatchObject({ line });
  });
});

describe('parseComputeApps', () => {
  it('reads processes, keeping rows whose pid or memory is hidden', () => {
    expect(parseComputeApps(fixture('apps-four-a100-80gb.csv'))).toEqual([
      { gpuUuid: 'GPU-a1f0c3d2-1e2b-4c3d-9e4f-5a6b7c8d9e01', pid: 77102, usedMemMB: 30712 },
      { gpuUuid: 'GPU-c3d2e5f4-3a4d-4e5f-9a6b-7c8d9e0f1a23' },
    ]);
  });

  it('reads empty output as no processes', () => {
    expect(parseComputeApps(fixture('apps-empty.csv'))).toEqual([]);
  });

  it('refuses output of the wrong shape', () => {
    expect(() => parseComputeApps('No running processes found')).toThrow(NvidiaSmiOutputError);
    expect(() => parseComputeApps('GPU-1, 12')).toThrow(NvidiaSmiOutputError);
  });
});

describe('buildRealtimeAnnotation', () => {
  it('builds the docs/api.md §4 value for one card with its process count', () => {
    const { cards } = parseGpuQuery(fixture('gpu-one-a100-40gb.csv'));
    const annotation = buildRealtimeAnnotation(cards, parseComputeApps(fixture('apps-one-a100.csv')), NOW);
    expect(serializeRealtimeAnnotation(annotation)).toBe(
      '{"time":"2025-03-14T09:26:53.000Z","devices":[{"id":"GPU-8f3c2b1e-5d4a-4e7b-9c21-0a6d3e5f7b92",' +
        '"usedMemMB":2048,"totalMemMB":40960,"utilization":45,"processCount":1}]}',
    );
  });

  it('counts processes per card on eight cards, idle cards at zero', () => {
    const { cards } = parseGpuQuery(fixture('gpu-eight-h100-80gb.csv'));
    const annotation = buildRealtimeAnnotation(cards, parseComputeApps(fixture('apps-eight-h100.csv')), NOW);
    expect(annotation.devices.map((d) => d.processCount)).toEqual([1, 1, 2, 0, 0, 1, 3, 0]);
    expect(annotation.devices).toHaveLength(8);
  });

  it('leaves processCount out when the process list is unknown, and utilization out when unavailable', () => {
    const { cards } = parseGpuQuery(fixture('gpu-four-a100-80gb-with-errors.csv'));
    const annotation = buildRealtimeAnnotation(cards, undefined, NOW);
    expect(annotation.devices).toEqual([
      { id: 'GPU-a1f0c3d2-1e2b-4c3d-9e4f-5a6b7c8d9e01', usedMemMB: 30721, totalMemMB: 81920, utilization: 55 },
      { id: 'GPU-c3d2e5f4-3a4d-4e5f-9a6b-7c8d9e0f1a23', usedMemMB: 10240, totalMemMB: 81920 },
    ]);
  });

  it('writes an empty device list for a node without readable cards', () => {
    expect(serializeRealtimeAnnotation(buildRealtimeAnnotation([], [], NOW))).toBe(
      '{"time":"2025-03-14T09:26:53.000Z","devices":[]}',
    );
  });
});

describe('the annotation as the control plane reads it', () => {
  it.each([
    ['gpu-one-a100-40gb.csv', 'apps-one-a100.csv'],
    ['gpu-eight-h100-80gb.csv', 'apps-eight-h100.csv'],
    ['gpu-four-a100-80gb-with-errors.csv', undefined],
    ['gpu-empty.csv', 'apps-empty.csv'],
  ])('%s parses with the engine\'s parseRealtimeReport to the same figures', (gpuFile, appsFile) => {
    const { cards } = parseGpuQuery(fixture(gpuFile));
    const apps = appsFile === undefined ? undefined : parseComputeApps(fixture(appsFile));
    const annotation = buildRealtimeAnnotation(cards, apps, NOW);
    const report = parseRealtimeReport(serializeRealtimeAnnotation(annotation));
    expect(report?.timeMs).toBe(NOW);
    expect(report?.devices).toEqual(
      Object.fromEntries(annotation.devices.map(({ id, ...usage }) => [id, usage])),
    );
  });

  it('is written under the documented node annotation (docs/realtime.md), the one the control plane reads', () => {
    expect(REALTIME_ANNOTATION).toBe('hami.io/node-nvidia-realtime');
  });
});
