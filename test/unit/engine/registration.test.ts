import { parseNodeRegistration, parseRealtimeReport } from '../../../lib/engine/registration';
import type { NodeLike } from '../../../lib/engine/types';
import { config } from './fixtures';

const nodeWith = (annotations: Record<string, string>, allocatable?: Record<string, string>): NodeLike => ({
  metadata: { name: 'n1', annotations },
  ...(allocatable ? { status: { allocatable } } : {}),
});
const REG = 'hami.io/node-nvidia-register';

describe('parseNodeRegistration', () => {
  it.each([
    ['a UUID listed twice', '[{"id":"GPU-0","count":10,"devmem":1000,"devcore":100,"type":"NVIDIA-T4","health":true},{"id":"GPU-0","count":10,"devmem":1000,"devcore":100,"type":"NVIDIA-T4","health":true,"index":1}]', 'hami.io/node-nvidia-register lists device "GPU-0" more than once'],
    ['a card without a UUID', '[{"id":"","count":10,"devmem":1000,"devcore":100,"type":"NVIDIA-T4","health":true}]', 'hami.io/node-nvidia-register device 0 has no id'],
  ])('an inconsistent registration (%s) leaves the node unregistered, with the reason', (_label, text, reason) => {
    expect(parseNodeRegistration(nodeWith({ [REG]: text }), config())).toEqual({ registered: false, reason });
  });

  it('decodes the JSON format with omitted zero values (docs/hami-parity.md §2.2 example)', () => {
    const text = '[{"id":"GPU-0","count":10,"devmem":8192,"devcore":100,"type":"NVIDIA-A100","numa":0,"health":true,"index":0,"mode":"hami-core"},{"id":"GPU-1","count":10,"devmem":8192,"devcore":100,"type":"NVIDIA-A100","index":1}]';
    const registration = parseNodeRegistration(nodeWith({ [REG]: text }), config());
    expect(registration).toEqual({
      registered: true,
      cordoned: [],
      pairScores: {},
      devices: [
        { id: 'GPU-0', index: 0, count: 10, devmem: 8192, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: 'hami-core', health: true },
        { id: 'GPU-1', index: 1, count: 10, devmem: 8192, devcore: 100, type: 'NVIDIA-A100', numa: 0, mode: '', health: false },
      ],
    });
  });

  it('matches JSON keys case-insensitively, as Go does', () => {
    const registration = parseNodeRegistration(nodeWith({ [REG]: '[{"ID":"GPU-0","Count":4,"DevMem":100,"DevCore":100,"Type":"NVIDIA-T4","Health":true}]' }), config());
    expect(registration.registered && registration.devices[0]).toMatchObject({ id: 'GPU-0', count: 4, devmem: 100, type: 'NVIDIA-T4', health: true });
  });

  it.each([
    ['7 fields', 'GPU-ebe7c3f7-303d-558d-435e-99a160631fe4,10,7680,100,NVIDIA-Tesla P4,0,true:', 0, 'hami-core'],
    ['9 fields', 'GPU-ebe7c3f7-303d-558d-435e-99a160631fe4,10,7680,100,NVIDIA-Tesla P4,0,true,1,hami-core:', 1, 'hami-core'],
  ])('decodes the legacy format, %s (docs/hami-parity.md §2.3)', (_label, text, index, mode) => {
    const registration = parseNodeRegistration(nodeWith({ [REG]: text }), config());
    expect(registration).toEqual({
      registered: true,
      cordoned: [],
      pairScores: {},
      devices: [{ id: 'GPU-ebe7c3f7-303d-558d-435e-99a160631fe4', index, count: 10, devmem: 7680, devcore: 100, type: 'NVIDIA-Tesla P4', numa: 0, mode, health: true }],
    });
  });

  it('reads cordon UUIDs and pair scores', () => {
    const registration = parseNodeRegistration(
      nodeWith({
        [REG]: '[{"id":"GPU-0","count":1,"devmem":1,"devcore":100,"type":"NVIDIA-X","health":true}]',
        'hami.io/device-cordon': ' GPU-0 ,, GPU-9 ',
        'hami.io/node-nvidia-score': '[{"uuid":"GPU-0","score":{"GPU-1":50,"GPU-2":20}}]',
      }),
      config(),
    );
    expect(registration).toMatchObject({ registered: true, cordoned: ['GPU-0', 'GPU-9'], pairScores: { 'GPU-0': { 'GPU-1': 50, 'GPU-2': 20 } } });
  });

  const DEVICE = '[{"id":"GPU-0","count":10,"devmem":8192,"devcore":100,"type":"NVIDIA-A100","health":true}]';
  it.each<[string, NodeLike, RegExp]>([
    ['missing annotation', nodeWith({}), /^annos not found hami\.io\/node-nvidia-register$/],
    ['empty list', nodeWith({ [REG]: '[]' }), /^no gpu found on node$/],
    ['malformed JSON', nodeWith({ [REG]: '[{"id":' }), /not valid JSON/],
    ['JSON object, not array', nodeWith({ [REG]: '[1]' }), /device 0 is not an object/],
    ['string count', nodeWith({ [REG]: '[{"id":"GPU-0","count":"10"}]' }), /"count" must be an integer/],
    ['negative devmem', nodeWith({ [REG]: '[{"id":"GPU-0","count":10,"devmem":-1}]' }), /"devmem" -1 is out of range/],
    ['huge devmem', nodeWith({ [REG]: '[{"id":"GPU-0","count":10,"devmem":1e12}]' }), /"devmem" 1000000000000 is out of range/],
    ['non-boolean health', nodeWith({ [REG]: '[{"id":"GPU-0","health":"yes"}]' }), /"health" must be true or false/],
    ['legacy without colon', nodeWith({ [REG]: 'GPU-0,10,7680,100,NVIDIA,0,true' }), /neither JSON nor the legacy/],
    ['legacy wrong field count', nodeWith({ [REG]: 'GPU-0,10,7680,100,NVIDIA,0:' }), /has 6 fields, expected 7 or 9/],
    ['legacy non-integer', nodeWith({ [REG]: 'GPU-0,ten,7680,100,NVIDIA,0,true:' }), /count "ten" is not an integer/],
    ['legacy negative index', nodeWith({ [REG]: 'GPU-0,10,7680,100,NVIDIA,0,true,-1,hami-core:' }), /index -1 is out of range/],
    ['legacy bad health', nodeWith({ [REG]: 'GPU-0,10,7680,100,NVIDIA,0,maybe:' }), /health "maybe" is not a boolean/],
    ['bad pair scores', nodeWith({ [REG]: DEVICE, 'hami.io/node-nvidia-score': '{oops' }), /node-nvidia-score is not valid JSON/],
    ['allocatable 0', nodeWith({ [REG]: DEVICE }, { 'nvidia.com/gpu': '0' }), /^allocatable nvidia\.com\/gpu is 0$/],
  ])('is unregistered with a readable reason: %s', (_label, n, reason) => {
    const registration = parseNodeRegistration(n, config());
    expect(registration.registered).toBe(false);
    expect(!registration.registered && registration.reason).toMatch(reason);
  });

  it('is registered when allocatable is absent or above 0', () => {
    expect(parseNodeRegistration(nodeWith({ [REG]: DEVICE }), config()).registered).toBe(true);
    expect(parseNodeRegistration(nodeWith({ [REG]: DEVICE }, { 'nvidia.com/gpu': '20' }), config()).registered).toBe(true);
  });
});

describe('parseRealtimeReport', () => {
  it('parses the node reporter annotation (docs/api.md §4)', () => {
    const report = parseRealtimeReport(
      '{"time":"2026-01-02T03:04:05Z","devices":[{"id":"GPU-1","usedMemMB":2048,"totalMemMB":81559,"utilization":45,"processCount":1}]}',
    );
    expect(report).toEqual({
      timeMs: Date.UTC(2026, 0, 2, 3, 4, 5),
      devices: { 'GPU-1': { usedMemMB: 2048, totalMemMB: 81559, utilization: 45, processCount: 1 } },
    });
  });

  it.each([
    undefined,
    'not json',
    '[]',
    '{"devices":[]}',
    '{"time":"yesterday","devices":[]}',
    '{"time":"2026-01-02T03:04:05Z"}',
    '{"time":"2026-01-02T03:04:05Z","devices":[{"id":"GPU-1","usedMemMB":-1,"totalMemMB":10}]}',
    '{"time":"2026-01-02T03:04:05Z","devices":[{"usedMemMB":1,"totalMemMB":10}]}',
    '{"time":"2026-01-02T03:04:05Z","devices":[null]}',
  ])('invalid report %j -> undefined', (text) => {
    expect(parseRealtimeReport(text)).toBeUndefined();
  });
});
