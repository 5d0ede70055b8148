/**
 * A TCP hop between the hub and its radio (the simulator) that the test controls, to do to the
 * link what networks and radios do: `cut()` closes every connection and refuses new ones (a
 * radio unplugged, a Wi-Fi radio rebooting), `stall()` keeps the connections open but passes
 * nothing either way (firmware hung, a black-holed route), `restore()` brings it back.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';
import { encodeFrame, StreamFramer } from '../../../src/mesh/framing.js';
import { decodeFromRadio } from '../../../src/mesh/packet-decoder.js';

export class RadioProxy {
  private server: Server | undefined;
  private readonly pairs = new Set<{ client: Socket; radio: Socket }>();
  private stalled = false;
  /**
   * The mesh goes quiet: what the radio tells of the mesh (`FromRadio.packet`, and the node
   * database it replays in a handshake, `node_info`: the simulator's nodes keep being heard) is
   * dropped; its own answers (my_info, config, channels, config_complete_id, queue status) still
   * pass, so a hub that asks for its config again (after a `rebooted` a test injected) gets it.
   * The hub's bytes still reach the radio.
   */
  quiet = false;
  /** Connections the proxy accepted from the hub (each one a radio connection attempt). */
  accepted = 0;
  port = 0;

  constructor(private readonly radioPort: number) {}

  /** Starts `sim` and a proxy in front of it; the hub connects to the proxy's `port`. */
  static async before(sim: { start(): Promise<{ port: number }> }): Promise<RadioProxy> {
    const proxy = new RadioProxy((await sim.start()).port);
    await proxy.start();
    return proxy;
  }

  async start(): Promise<number> {
    await this.listen();
    return this.port;
  }

  private async listen(): Promise<void> {
    const server = createServer((client) => this.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    const address = server.address();
    if (address && typeof address === 'object') this.port = address.port;
  }

  private accept(client: Socket): void {
    this.accepted++;
    const radio = connect(this.radioPort, '127.0.0.1');
    const pair = { client, radio };
    this.pairs.add(pair);
    const end = () => {
      client.destroy();
      radio.destroy();
      this.pairs.delete(pair);
    };
    client.on('error', end).on('close', end);
    radio.on('error', end).on('close', end);
    // While stalled nothing passes: each side's bytes are dropped, as on a dead route.
    client.on('data', (d) => {
      if (!this.stalled) radio.write(d);
    });
    const framer = new StreamFramer();
    radio.on('data', (d: Buffer) => {
      // Framed even when not quiet, so a frame split across chunks is whole when quiet starts.
      const events = framer.push(d);
      if (this.stalled) return;
      if (!this.quiet) {
        client.write(d);
        return;
      }
      for (const event of events) {
        if (event.kind !== 'frame') continue;
        const kind = decodeFromRadio(event.payload).payloadVariant.case;
        if (kind === 'packet' || kind === 'nodeInfo') continue;
        client.write(encodeFrame(event.payload));
      }
    });
  }

  /** Every connection closed, and new ones refused (nothing listens) until restore(). */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const { client, radio } of this.pairs) {
      client.destroy();
      radio.destroy();
    }
    this.pairs.clear();
    if (server) await new Promise((resolve) => server.close(resolve));
  }

  /** Connections stay open (and new ones are accepted) but no byte passes, either way. */
  stall(): void {
    this.stalled = true;
  }

  async restore(): Promise<void> {
    this.stalled = false;
    if (!this.server) await this.listen();
  }

  /** Writes `bytes` to the hub as if the radio sent them (between the radio's own frames). */
  inject(bytes: Uint8Array): void {
    for (const { client } of this.pairs) client.write(bytes);
  }

  get connections(): number {
    return this.pairs.size;
  }

  async stop(): Promise<void> {
    await this.cut();
  }
}
