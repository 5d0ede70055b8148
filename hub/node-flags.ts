/**
 * The V8 flags the hub runs with, wherever it is started: `npm start` (package.json), the
 * `meshhub` command's shebang (hub/cli.ts), the systemd unit (systemd/meshhub.service), the
 * `meshhub` command scripts/install-pi.sh installs on a Pi, and the tests and benches that start
 * the built hub as a process. tests/hub/node-flags.test.ts checks that each of those carries
 * exactly these (tests/hub/install-pi.test.ts the installed command). They must be given at start: V8 sizes its heap when
 * the process begins, and `v8.setFlagsFromString` afterwards changes nothing.
 *
 * A young generation of a fixed, small size (2 MB semi-spaces). By default V8 sizes it to the
 * allocation rate, between 1 MB and 16 MB a semi-space on 64-bit, shrinks it when idle and grows
 * it again under load. Under the soak's steady load (docs/reliability.md) it grew from 8 to 32 MB
 * over ten minutes: RSS rose 5.3 MB/min with the live heap flat, failing the slope test. Capped
 * at 4 MB with the default floor it still grew 1 → 8 MB inside the judged window (RSS slope 1.06
 * against a bound of 1). Fixed at 2 MB it cannot drift. Cost, measured with the MQTT bench (50k
 * QoS 1 readings, 1,000 in flight, two runs each): hub CPU per message 15.4–15.8 µs against
 * 12.8–15.8 µs by default, within this VM's run-to-run noise; the hub with 200 clients publishing
 * sat at 110 MB against 130–132 MB. A site's real load is thousands of times below that burst,
 * and on a Pi Zero 2 W (512 MB) memory is what runs out.
 */
export const HUB_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--min-semi-space-size=2'];
