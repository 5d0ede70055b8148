/**
 * The container image as a person runs it (README "Install: container"): the base image built
 * without a registry (scripts/container/make-base.sh), the Containerfile built on it
 * (scripts/container/build.sh), then `podman run` with no radio, the data in a named volume and
 * the ports published on loopback. A sensor's reading published over MQTT shows up over HTTP and
 * is still there after the container is replaced (same volume); the hub runs as a user without
 * privileges; the image's HEALTHCHECK answers. The same image runs `meshhub upstream` (as
 * compose.upstream.yaml does) against a scratch schema of the test PostgreSQL.
 *
 * Minutes long: vitest.container.config.ts, run by `.ci/run` as its own step. It runs under
 * CI=true (failing, never skipping, when podman is missing) or with MESHHUB_CONTAINER_TEST=1.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, getJson, waitFor } from '../helpers/hub.js';
import { createTestSchema, skipWithoutPostgres } from '../helpers/postgres.js';
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

const IMAGE = `localhost/meshhub:${VERSION}`;
const NAME = `meshhub-image-test-${process.pid}`;
const VOLUME = `${NAME}-data`;
const SENSOR_PASSWORD = 'a-long-sensor-password';

const skip = !wanted
  ? noteSkip('the container image', 'it takes minutes: set MESHHUB_CONTAINER_TEST=1 (CI runs it)')
  : !hasPodman &&
    skipBecauseMissing('podman', 'podman is not installed (apt-get install podman buildah mmdebstrap)');

const container: Container = { name: NAME, image: IMAGE, volume: VOLUME, httpPort: 0, mqttPort: 0 };
let httpPort = 0;
let mqttPort = 0;

describe.skipIf(skip)('the container image', () => {
  beforeAll(async () => {
    usePodmanEnv();
    step('bash', ['scripts/container/make-base.sh']);
    step('bash', ['scripts/container/build.sh', '--base', BASE]);
    httpPort = container.httpPort = await freePort();
    mqttPort = container.mqttPort = await freePort();
    await removeContainer(NAME);
    await podman('volume', 'rm', '-f', VOLUME).catch(() => undefined);
  });

  afterAll(async () => {
    if (!hasPodman || !wanted) return;
    await removeContainer(NAME);
    await podman('volume', 'rm', '-f', VOLUME).catch(() => undefined);
  });

  it('is tagged with the VERSION file and latest', async () => {
    const { stdout } = await podman(
      'image',
      'inspect',
      '--format',
      '{{.Id}}',
      IMAGE,
      'localhost/meshhub:latest',
    );
    const [versioned, latest] = stdout.trim().split('\n');
    expect(versioned).toBe(latest);
    // The image's meshhub command says the same version.
    const version = await podman(
      'run',
      '--rm',
      '-v',
      `${VOLUME}:/data`,
      '--network=none',
      IMAGE,
      '--version',
    );
    expect(version.stdout).toBe(`${VERSION}\n`);
  });

  it('runs the hub on the simulator without a radio, as a user without privileges', async () => {
    expect(await startContainer(container)).toMatchObject({ status: 'ok', version: VERSION });
    const health = (await getJson(`http://127.0.0.1:${httpPort}/health`)).body;
    expect(health.radio).toMatchObject({ simulated: true });
    const id = await podman('exec', NAME, 'id', '-u');
    expect(Number(id.stdout.trim())).not.toBe(0);
    const owner = await podman('exec', NAME, 'stat', '-c', '%u %a', '/data');
    expect(owner.stdout.trim()).toBe(`${id.stdout.trim()} 700`);
    // The image's HEALTHCHECK (kept by build.sh's --format docker) answers on a running hub.
    await podman('healthcheck', 'run', NAME);
  });

  it('keeps a reading published over MQTT when the container is replaced on the same volume', async () => {
    // A login for the sensor, made inside the container as the README shows.
    const add = addSensor(NAME, 'sensor', SENSOR_PASSWORD);
    expect(add.status, add.stderr).toBe(0);
    await publishReading(mqttPort, 'sensor', SENSOR_PASSWORD, {
      node_id: 'garden',
      temperature_c: 18.5,
      humidity_percent: 52,
    });
    const baseUrl = `http://127.0.0.1:${httpPort}`;
    const seen = await waitFor(() => latestOf(baseUrl, 'garden'), 30_000, 'the reading over HTTP');
    expect(seen).toMatchObject({ node_id: 'garden', temperature_c: 18.5, humidity_percent: 52 });

    // An upgrade's shape: stop, remove, run a new container on the same volume.
    await podman('stop', '-t', '15', NAME);
    await removeContainer(NAME);
    await startContainer(container);
    const after = await waitFor(() => latestOf(baseUrl, 'garden'), 30_000, 'the reading after the restart');
    expect(after).toMatchObject({ node_id: 'garden', temperature_c: 18.5, humidity_percent: 52 });
  });

  it('runs the upstream from the same image against PostgreSQL', async (ctx) => {
    if (await skipWithoutPostgres()) return ctx.skip();
    const schema = await createTestSchema('image');
    const port = await freePort();
    const name = `${NAME}-upstream`;
    try {
      // Host networking: the test's PostgreSQL listens on the host's loopback.
      await podman(
        ...['run', '-d', '--name', name, '--network=host', '-e', `UPSTREAM_DATABASE_URL=${schema.url}`],
        ...['-e', 'HTTP_HOST=127.0.0.1', '-e', `HTTP_PORT=${port}`, IMAGE, 'upstream'],
      );
      const health = await waitFor(
        async () => {
          const answer = await getJson(`http://127.0.0.1:${port}/health`).catch(() => undefined);
          return answer?.status === 200 ? answer.body : undefined;
        },
        60_000,
        "the upstream's /health",
      );
      expect(health.status).toMatch(/^(ok|degraded)$/);
    } finally {
      await podman('rm', '-f', '-v', '-t', '15', name).catch(() => undefined);
      await schema.drop();
    }
  });
});
