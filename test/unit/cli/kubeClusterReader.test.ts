import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findKubeconfig, kubeClusterAccess } from '../../../lib/cli/kubeClusterReader';

describe('findKubeconfig', () => {
  const exists = (present: string[]) => (path: string) => present.includes(path);
  it.each([
    [{ KUBECONFIG: '/a:/b' }, ['/b'], { kind: 'files', files: ['/b'] }],
    [{ KUBECONFIG: '/a' }, [], { kind: 'none', reason: 'KUBECONFIG names no existing file (/a)' }],
    [{}, ['/home/u/.kube/config'], { kind: 'files', files: ['/home/u/.kube/config'] }],
    [{ KUBERNETES_SERVICE_HOST: '10.0.0.1' }, ['/var/run/secrets/kubernetes.io/serviceaccount/token'], { kind: 'in-cluster' }],
    [{}, [], { kind: 'none', reason: 'no kubeconfig found (KUBECONFIG is unset and ~/.kube/config does not exist)' }],
  ])('%j with files %j', (env, present, expected) => {
    expect(findKubeconfig(env, exists(present), '/home/u')).toEqual(expected);
  });

  it('takes --kubeconfig in place of KUBECONFIG and ~/.kube/config, as kubectl does', () => {
    const present = exists(['/home/u/.kube/config', '/b', '/mine']);
    expect(findKubeconfig({ KUBECONFIG: '/b' }, present, '/home/u', { kubeconfig: '/mine' })).toEqual({ kind: 'files', files: ['/mine'] });
    expect(findKubeconfig({ KUBECONFIG: '/b' }, present, '/home/u', { kubeconfig: '/gone' })).toEqual({ kind: 'none', reason: '--kubeconfig names no existing file (/gone)' });
  });
});

describe('kubeClusterAccess on @kubernetes/client-node', () => {
  let server: Server;
  let dir: string;
  let kubeconfig: string;
  beforeAll(async () => {
    server = createServer((req, res) => {
      const send = (code: number, body: unknown) => {
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.headers.authorization !== 'Bearer kube-token') return send(401, { kind: 'Status', code: 401, message: 'Unauthorized' });
      if (req.url === '/api/v1/namespaces/default/pods/waiting') {
        return send(200, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'waiting', namespace: 'default' }, spec: { schedulerName: 'hami-scheduler', containers: [{ name: 'c' }] } });
      }
      if (req.url === '/api/v1/nodes/odd-node') return send(200, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'odd-node', annotations: { 'hami.io/node-nvidia-register': 7 } } });
      if (req.url === '/api/v1/nodes/secret-node') return send(403, { kind: 'Status', code: 403, message: 'nodes "secret-node" is forbidden' });
      return send(404, { kind: 'Status', code: 404, reason: 'NotFound', message: 'not found' });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    dir = mkdtempSync(join(tmpdir(), 'hami-diag-'));
    kubeconfig = join(dir, 'config');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: local, cluster: {server: "http://127.0.0.1:' + port + '", insecure-skip-tls-verify: true}}]',
        'users: [{name: me, user: {token: kube-token}}]',
        'contexts: [{name: local, context: {cluster: local, user: me}}]',
        'current-context: local',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('reads pods and nodes, and answers undefined for 404', async () => {
    const access = kubeClusterAccess({ KUBECONFIG: kubeconfig });
    if (access.kind !== 'ready') throw new Error(access.reason);
    expect(await access.reader.getPod('default', 'waiting')).toMatchObject({ metadata: { name: 'waiting' }, spec: { schedulerName: 'hami-scheduler' } });
    expect(await access.reader.getPod('default', 'ghost')).toBeUndefined();
    expect(await access.reader.getNode('gone')).toBeUndefined();
  });

  it('turns other API errors into one short line', async () => {
    const access = kubeClusterAccess({ KUBECONFIG: kubeconfig });
    if (access.kind !== 'ready') throw new Error(access.reason);
    await expect(access.reader.getNode('secret-node')).rejects.toThrow(
      'reading node secret-node: the Kubernetes API answered 403 (nodes "secret-node" is forbidden)',
    );
  });

  it('says so when the API answers an object the walk cannot read, instead of walking it', async () => {
    const access = kubeClusterAccess({ KUBECONFIG: kubeconfig });
    if (access.kind !== 'ready') throw new Error(access.reason);
    await expect(access.reader.getNode('odd-node')).rejects.toThrow(
      'reading node odd-node: the Kubernetes API answered an object the scheduler cannot read (metadata.annotations.hami.io/node-nvidia-register: Invalid input: expected string, received number)',
    );
  });

  it('is unavailable, with the reason, when the kubeconfig cannot be used', () => {
    expect(kubeClusterAccess({ KUBECONFIG: join(dir, 'missing') })).toEqual({
      kind: 'unavailable',
      reason: `KUBECONFIG names no existing file (${join(dir, 'missing')})`,
    });
    const broken = join(dir, 'broken');
    writeFileSync(broken, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
    expect(kubeClusterAccess({ KUBECONFIG: broken })).toEqual({ kind: 'unavailable', reason: 'the kubeconfig has no current context with a cluster' });
  });
});
