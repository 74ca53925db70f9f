/**
 * The set-up and teardown relay suites repeat: the fake API server (which takes the relay's token, `relay-token`),
 * a control plane (the recording fake, or the local server with its store), relays started against both, and all
 * of them closed afterwards, relays first, also when a test or the set-up failed.
 */
import { startLocalServer, type LocalServer } from '../../lib/local/server';
import type { RunningRelay } from '../../lib/relay/relay';
import { eventually, startFakeControlPlane, startTestRelay, type FakeControlPlane, type TestRelayOptions } from '../integration/relay/harness';
import { controlClient, type ControlClient } from './cluster';
import { lifecycle, running, type CloseLater, type Lifetime } from './controlPlaneRig';
import { startFakeKube, type FakeKube } from './fakeKube';

export interface RelayRigOptions<Rig> {
  readonly per: Lifetime;
  /** Runs before any relay starts: seeds the API server (users, grants, objects) and the control plane's answers. */
  readonly prepare?: (rig: Rig) => void | Promise<void>;
  /**
   * The relay started for each test (or the suite), as `rig.relay`; a function builds its options afresh each time
   * (a logger or a gate the tests read). Without it, tests start their own with `startRelay`.
   */
  readonly relay?: TestRelayOptions | (() => TestRelayOptions);
}

export interface RelayRig {
  readonly kube: FakeKube;
  /** The relay the rig started (option `relay`), or the one `restartRelay` put in its place. */
  readonly relay: RunningRelay;
  /** Starts a relay against this API server and control plane; closed at teardown unless the test closed it already. */
  startRelay(options?: TestRelayOptions): Promise<RunningRelay>;
  /** Closes `relay` (unless the test has) and starts another in its place: a restart, or other settings. */
  restartRelay(options?: TestRelayOptions): Promise<RunningRelay>;
}

export interface FakeControlPlaneRig extends RelayRig {
  /** The fake control plane: records calls, answers what a test tells it to. */
  readonly cp: FakeControlPlane;
}

export interface LocalControlPlaneRig extends RelayRig {
  /** The local server: the real control plane with its embedded store. */
  readonly local: LocalServer;
  /** A client of the current local server, with its token. */
  readonly api: ControlClient;
}

/** Relays against the fake control plane, for the tests of the calling file or describe block. */
export function useRelayOnFakeControlPlane(options: RelayRigOptions<FakeControlPlaneRig>): FakeControlPlaneRig {
  let cp: FakeControlPlane | undefined;
  const base = relayRig<FakeControlPlaneRig>(
    options,
    async (closeLater) => {
      const started = await startFakeControlPlane();
      cp = started;
      closeLater(async () => {
        cp = undefined;
        await started.close();
      });
      return started.url;
    },
    {},
  );
  return Object.defineProperties(base, { cp: { get: () => running(cp, 'the fake control plane') } });
}

export interface LocalControlPlaneOptions extends RelayRigOptions<LocalControlPlaneRig> {
  /** The bearer token the control plane requires; every relay the rig starts sends it (HAMI_API_TOKEN). */
  readonly token: string;
  /** The control plane's configuration, as environment variables. */
  readonly env?: Readonly<Record<string, string>>;
  /** Nodes (created in `prepare`) the control plane must have registered through the rig's relay before the tests run. */
  readonly registered?: readonly string[];
}

/** Relays against the local server, for the tests of the calling file or describe block. */
export function useRelayOnLocalControlPlane(options: LocalControlPlaneOptions): LocalControlPlaneRig {
  let local: LocalServer | undefined;
  const base = relayRig<LocalControlPlaneRig>(
    options,
    async (closeLater) => {
      const started = await startLocalServer({ token: options.token, env: options.env ?? {} });
      local = started;
      closeLater(async () => {
        local = undefined;
        await started.close();
      });
      return started.url;
    },
    { HAMI_API_TOKEN: options.token },
    async (rig) => {
      await eventually(async () => {
        for (const node of options.registered ?? []) if ((await rig.api.devices(node)).json?.registered !== true) throw new Error(`${node} is not registered yet`);
      });
    },
  );
  const rig: LocalControlPlaneRig = Object.defineProperties(base, {
    local: { get: () => running(local, 'the local control plane') },
    api: { value: controlClient(() => rig.local.url, options.token) },
  });
  return rig;
}

/**
 * The part both share: `startControlPlane` starts the control plane and answers its URL; `relayEnv` goes into every
 * relay's environment; `ready` runs once the rig's relay is up.
 */
function relayRig<Rig extends RelayRig>(
  options: RelayRigOptions<Rig>,
  startControlPlane: (closeLater: CloseLater) => Promise<string>,
  relayEnv: Readonly<Record<string, string>>,
  ready?: (rig: Rig) => Promise<void>,
): Rig {
  let kube: FakeKube | undefined;
  let controlPlaneUrl: string | undefined;
  let relay: RunningRelay | undefined;
  let closeLater: CloseLater | undefined;

  const launch = async (relayOptions: TestRelayOptions = {}): Promise<RunningRelay> => {
    const started = await startTestRelay(rig.kube, running(controlPlaneUrl, 'the control plane'), { ...relayOptions, env: { ...relayEnv, ...relayOptions.env } });
    // Closed once, whoever asks first: the test that stops it, or the teardown.
    let closing: Promise<void> | undefined;
    const once: RunningRelay = { ...started, close: () => (closing ??= started.close()) };
    running(closeLater, 'startRelay')(() => once.close());
    return once;
  };

  const rig: Rig = {
    get kube() {
      return running(kube, 'the fake API server');
    },
    get relay() {
      return running(relay, "the rig's relay (option `relay`, or `restartRelay`)");
    },
    startRelay: launch,
    async restartRelay(relayOptions?: TestRelayOptions) {
      await relay?.close();
      relay = await launch(relayOptions);
      return relay;
    },
  } as Rig;

  lifecycle(options.per, async (later) => {
    closeLater = later;
    later(async () => {
      kube = controlPlaneUrl = relay = closeLater = undefined;
    });
    const startedKube = await startFakeKube({ requiredToken: 'relay-token' });
    kube = startedKube;
    later(() => startedKube.close());
    controlPlaneUrl = await startControlPlane(later);
    await options.prepare?.(rig);
    if (options.relay === undefined) return;
    relay = await launch(typeof options.relay === 'function' ? options.relay() : options.relay);
    await ready?.(rig);
  });
  return rig;
}
