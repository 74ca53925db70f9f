/**
 * Eight clients filter pods in parallel onto the same nodes until they are full (the KAI over-allocation
 * pattern): no card may ever hold more memory, cores or slots than it has, and every pod that fits lands.
 * Runs over HTTP against the local server, on dynalite and on DynamoDB Local where Java is installed.
 */
import { decodePodDevices } from '../../../lib/engine/podAnnotations';
import { startLocalServer } from '../../../lib/local/server';
import { card, controlClient, gpuNode, gpuPod, patchedAnnotations } from '../../support/cluster';
import { backends } from '../../support/dynamo';

const CLIENTS = 8;
const NODES = 4;
const CARDS_PER_NODE = 2;
const CARD_MEM = 16384;
// Each card takes exactly four of these pods by memory and by cores; slots (10) are not the limit.
const POD_MEM = 4096;
const POD_CORES = 25;
const CAPACITY = NODES * CARDS_PER_NODE * 4;
const PODS = CAPACITY + 8;

/**
 * One server (one warm view shared by concurrent requests), or two servers on one store (two Lambda
 * environments, two kube-schedulers: each view is stale about the other's bookings).
 */
const setups: [string, number][] = [
  ['one environment', 1],
  ['two environments', 2],
];

describe.each(backends)('concurrent filters on %s', (_name, startBackend) => {
  it.each(setups)(
    '%s: never over-allocates a card, and places every pod that fits',
    async (_setup, environments) => {
      const backend = await startBackend();
      const servers = await Promise.all(Array.from({ length: environments }, () => startLocalServer({ ddbEndpoint: backend.endpoint, env: {} })));
      const server = servers[0]!;
      try {
        const api = controlClient(server.url);
        const apis = servers.map((s) => controlClient(s.url));
        const names = Array.from({ length: NODES }, (_, i) => `gpu-${i}`);
        await api.events(
          names.map((name) => ({
            type: 'ADDED',
            object: gpuNode(
              name,
              Array.from({ length: CARDS_PER_NODE }, (_, j) => card(`GPU-${name}-${j}`, { devmem: CARD_MEM })),
            ),
          })),
        );

        const queue = Array.from({ length: PODS }, (_, i) => gpuPod(`p${i}`, [{ name: 'c', gpu: 1, mem: POD_MEM, cores: POD_CORES }]));
        const placed: { pod: string; allocated: string }[] = [];
        const unplaced: string[] = [];
        let retriedErrors = 0;
        const client = async (index: number) => {
          const own = apis[index % apis.length]!;
          for (let pod = queue.shift(); pod; pod = queue.shift()) {
            // kube-scheduler retries a pod whose filter answered Error; do the same, a bounded number of times.
            for (let attempt = 0; ; attempt++) {
              const res = await own.filter(pod, names);
              if (res.json.Error !== '' && attempt < 5) {
                retriedErrors += 1;
                continue;
              }
              if (res.json.NodeNames?.length === 1) placed.push({ pod: pod.metadata.name, allocated: patchedAnnotations(res.json)['hami.io/vgpu-devices-allocated'] ?? '' });
              else unplaced.push(pod.metadata.name);
              break;
            }
          }
        };
        await Promise.all(Array.from({ length: CLIENTS }, (_, i) => client(i)));

        // What the answers handed out, card by card.
        const handedOut = new Map<string, { mem: number; cores: number; slots: number }>();
        for (const { allocated } of placed) {
          for (const container of decodePodDevices(allocated)) {
            for (const device of container) {
              const sum = handedOut.get(device.uuid) ?? { mem: 0, cores: 0, slots: 0 };
              sum.mem += device.usedmem;
              sum.cores += device.usedcores;
              sum.slots += 1;
              handedOut.set(device.uuid, sum);
            }
          }
        }
        for (const sum of handedOut.values()) {
          expect(sum.mem).toBeLessThanOrEqual(CARD_MEM);
          expect(sum.cores).toBeLessThanOrEqual(100);
          expect(sum.slots).toBeLessThanOrEqual(10);
        }
        // And what the ledger holds agrees with it.
        for (const name of names) {
          const view = (await api.devices(name)).json;
          for (const device of view.devices) {
            expect(device.usedmem).toBe(handedOut.get(device.id)?.mem ?? 0);
            expect(device.usedmem).toBeLessThanOrEqual(device.devmem);
            expect(device.usedcores).toBeLessThanOrEqual(device.devcore);
            expect(device.used).toBeLessThanOrEqual(device.count);
          }
        }
        expect(placed).toHaveLength(CAPACITY);
        expect(unplaced).toHaveLength(PODS - CAPACITY);
        expect(retriedErrors).toBeLessThan(PODS);
      } finally {
        await Promise.all(servers.map((s) => s.close()));
        await backend.stop();
      }
    },
    120_000,
  );
});
