/**
 * The arm64 image (a Raspberry Pi 4/5 with a 64-bit OS), built on this x86-64 machine as README
 * "In a container" shows: `scripts/container/build.sh --arch arm64`. Its build stage runs natively
 * and cross-compiles better-sqlite3; its runtime stage, and here the hub itself, run under
 * qemu-user-static. The image's programs are arm64, the hub starts on the simulator, a reading
 * published over MQTT reaches SQLite (the cross-compiled module) and is still there after the
 * container is replaced on the same volume.
 *
 * Run by vitest.container.config.ts (its own base images built first, whichever file runs first),
 * under CI=true — failing, never skipping, when this machine cannot run arm64 programs — or with
 * MESHHUB_CONTAINER_TEST=1.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, getJson, waitFor } from '../helpers/hub.js';
import { noteSkip, skipBecauseMissing } from '../helpers/skips.js';
import { latestOf } from '../mqtt/helpers.js';
import {
  addSensor,
  BASE,
  type Container,
  hasPodman,
  podman,
  publishReading,
  removeContainer,
  startContainer,
  step,
  usePodmanEnv,
  VERSION,
  wanted,
} from './podman.js';

const IMAGE = `localhost/meshhub:${VERSION}-arm64`;
const NAME = `meshhub-arm64-test-${process.pid}`;
const VOLUME = `${NAME}-data`;
const PASSWORD = 'a-long-sensor-password';

function runsArm64(): boolean {
  try {
    return readFileSync('/proc/sys/fs/binfmt_misc/qemu-aarch64', 'utf8').startsWith('enabled');
  } catch {
    return false;
  }
}

const skip = !wanted
  ? noteSkip('the arm64 image', 'it takes minutes: set MESHHUB_CONTAINER_TEST=1 (CI runs it)')
  : !hasPodman
    ? skipBecauseMissing('podman', 'podman is not installed (apt-get install podman buildah mmdebstrap)')
    : !runsArm64() &&
      skipBecauseMissing(
        'qemu-user-static',
        'this machine cannot run arm64 programs (apt-get install qemu-user-static binfmt-support)',
      );

const container: Container = {
  name: NAME,
  image: IMAGE,
  volume: VOLUME,
  httpPort: 0,
  mqttPort: 0,
  // Node under emulation starts several times slower than natively.
  healthWithinMs: 240_000,
};

describe.skipIf(skip)('the arm64 image, built on x86-64', () => {
  beforeAll(async () => {
    usePodmanEnv();
    step('bash', ['scripts/container/make-base.sh']);
    step('bash', ['scripts/container/make-base.sh', '--arch', 'arm64']);
    step('bash', [
      'scripts/container/build.sh',
      ...['--arch', 'arm64', '--base', `${BASE}-arm64`, '--build-base', BASE],
    ]);
    container.httpPort = await freePort();
    container.mqttPort = await freePort();
    await removeContainer(NAME);
    await podman('volume', 'rm', '-f', VOLUME).catch(() => undefined);
  });

  afterAll(async () => {
    if (skip) return;
    await removeContainer(NAME);
    await podman('volume', 'rm', '-f', VOLUME).catch(() => undefined);
  });

  it('is an arm64 image whose Node and SQLite module are arm64', async () => {
    const { stdout } = await podman('image', 'inspect', '--format', '{{.Architecture}}', IMAGE);
    expect(stdout.trim()).toBe('arm64');
    const probe = await podman(
      ...['run', '--rm', '--network=none', '--entrypoint', 'node', IMAGE, '-e'],
      // The cross-compiled better-sqlite3 loads and answers; `uname -m` as the process sees it.
      "const D=require('/app/node_modules/better-sqlite3');" +
        "console.log(process.arch, new D(':memory:').prepare('select 6*7 x').get().x, require('os').machine())",
    );
    expect(probe.stdout.trim()).toBe('arm64 42 aarch64');
  });

  it('runs the hub on the simulator and keeps a reading published over MQTT across a restart', async () => {
    const health = await startContainer(container);
    expect(health).toMatchObject({ status: 'ok', version: VERSION });
    expect((await getJson(`http://127.0.0.1:${container.httpPort}/health`)).body.radio).toMatchObject({
      simulated: true,
    });
    const add = addSensor(NAME, 'sensor', PASSWORD);
    expect(add.status, add.stderr).toBe(0);
    const reading = { node_id: 'orchard', temperature_c: 7.25, humidity_percent: 81 };
    await publishReading(container.mqttPort, 'sensor', PASSWORD, reading);
    const baseUrl = `http://127.0.0.1:${container.httpPort}`;
    expect(await waitFor(() => latestOf(baseUrl, 'orchard'), 60_000, 'the reading')).toMatchObject(reading);

    await podman('stop', '-t', '30', NAME);
    await removeContainer(NAME);
    await startContainer(container);
    expect(
      await waitFor(() => latestOf(baseUrl, 'orchard'), 60_000, 'the reading after the restart'),
    ).toMatchObject(reading);
  });
});
