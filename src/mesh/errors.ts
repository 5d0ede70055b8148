/**
 * Typed errors of the radio link (docs/architecture.md "Decisions": typed errors, after meshtastic/web's transport errors).
 */

/** A write was attempted while no stream to the radio is open. */
export class TransportClosedError extends Error {
  override readonly name = 'TransportClosedError';
  constructor(message = 'the radio transport is not connected') {
    super(message);
  }
}

/** A ToRadio/FromRadio protobuf longer than a stream frame may carry. */
export class PacketTooLargeError extends Error {
  override readonly name = 'PacketTooLargeError';
  constructor(
    readonly size: number,
    readonly maxSize: number,
  ) {
    super(`packet of ${size} bytes exceeds the ${maxSize}-byte frame limit`);
  }
}

/** The device did not echo our `want_config_id` as `config_complete_id` in time. */
export class HandshakeTimeoutError extends Error {
  override readonly name = 'HandshakeTimeoutError';
  constructor(readonly timeoutMs: number) {
    super(`no config_complete_id within ${timeoutMs} ms`);
  }
}

/** A protobuf payload (a FromRadio frame or a Data.payload of a known port) that does not decode. */
export class PayloadDecodeError extends Error {
  override readonly name = 'PayloadDecodeError';
  constructor(
    /** The message type that failed: `FromRadio`, `Telemetry`, `Position`, `User`. */
    readonly messageType: string,
    /** The Data.portnum the payload came on, when it came in a MeshPacket. */
    readonly portnum: number | undefined,
    options?: { cause?: unknown },
  ) {
    const cause = options?.cause instanceof Error ? `: ${options.cause.message}` : '';
    super(
      `cannot decode ${messageType}${portnum === undefined ? '' : ` (portnum ${portnum})`}${cause}`,
      options,
    );
  }
}
