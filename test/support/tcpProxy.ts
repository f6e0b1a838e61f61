import { type AddressInfo, type Server, type Socket, connect, createServer } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 in front of one target, to put ONE process (an
 * engine's NATS connection, say) behind a link that can go half-open while
 * everything else keeps its direct path.
 *
 * `pause()` black-holes the link: every socket stays open on both sides
 * (neither end sees a FIN or RST) but no byte, FIN or RST crosses in either
 * direction until `resume()`. What arrives meanwhile depends on `pauseMode`:
 *
 * - `'hold'` (the default) keeps it, in order, and delivers it on `resume()`,
 *   FINs and RSTs included. This is what TCP itself does across a partition
 *   that heals: the sender retransmits, nothing in the middle of a live
 *   stream is ever lost. A path that never heals looks the same to both
 *   ends as one that drops: nothing arrives, and each side's own timeouts
 *   (NATS pings) are all that can notice. Memory grows with what the ends
 *   send while paused (unlike a real path, no TCP window closes on the
 *   sender); for NATS pings and a few messages that is nothing.
 * - `'drop'` discards it: memory stays flat however long the pause. A TCP
 *   stream cannot carry on past lost bytes (NATS would read garbage), so on
 *   `resume()` every link that lost bytes, or whose other end closed while
 *   paused, is reset on both sides, as when TCP gave up retransmitting.
 *   Links that lost nothing carry on.
 *
 * A connection accepted while paused completes its handshake with the proxy
 * (the client thinks it is connected) but the proxy dials the target only
 * on `resume()`, as a SYN lost in the black hole would be retried: the
 * server does not see it, and gets no bytes from it, until then.
 *
 * `cut()` resets (RST) every socket on both sides at once. `close()` also
 * stops listening and resolves once every socket is gone.
 */
export interface TcpProxy {
  readonly port: number;
  /** `nats://127.0.0.1:<port>`, for a NATS client to connect through the proxy. */
  readonly url: string;
  /** Client connections currently open (accepted and not yet closed). */
  readonly connections: number;
  /** Client connections accepted since the start. */
  readonly accepted: number;
  readonly paused: boolean;
  pause(): void;
  resume(): void;
  /** Resets every open connection on both sides (the proxy keeps listening). */
  cut(): void;
  /** Stops listening and resets every connection; resolves once no handle of the proxy is left. Idempotent. */
  close(): Promise<void>;
}

export interface TcpProxyOptions {
  target: { host: string; port: number };
  /** What happens to bytes arriving while paused (see `TcpProxy`): held for `resume()` (default) or dropped. */
  pauseMode?: 'hold' | 'drop';
}

/** What a paused direction keeps: bytes, then maybe the FIN or RST that ended them. */
type Held = Buffer | 'end' | 'reset';

/** One direction of one connection: what `from` sends goes to `to` (null until the upstream is dialled). */
interface Pipe {
  from: Socket | null;
  to: Socket | null;
  held: Held[];
  dropped: number;
  draining: boolean;
}

/** A client connection and the upstream connection the proxy dialled for it. */
interface Link {
  client: Socket;
  upstream: Socket | null;
  up: Pipe;
  down: Pipe;
}

/**
 * RST when the socket is connected; a socket still connecting, or already
 * half closed (a FIN went or came), is simply destroyed: Node 20's
 * `resetAndDestroy` on a half-closed socket sometimes never emits 'close'
 * (seen here: destroyed, closed, and no event), which would leave `close()`
 * waiting for ever.
 */
function reset(socket: Socket | null): void {
  if (!socket || socket.destroyed) return;
  if (socket.connecting || socket.writableEnded || socket.readableEnded) socket.destroy();
  else socket.resetAndDestroy();
}

export async function startTcpProxy(options: TcpProxyOptions): Promise<TcpProxy> {
  const mode = options.pauseMode ?? 'hold';
  let paused = false;
  let accepted = 0;
  let closing: Promise<void> | undefined;
  const links = new Set<Link>();
  const sockets = new Set<Socket>();
  const track = (socket: Socket) => {
    sockets.add(socket);
    // Errors show as 'close' with hadError; without a listener they would throw.
    socket.on('error', () => {});
    socket.once('close', () => sockets.delete(socket));
  };
  // A link is forgotten once both its sockets are gone (one still open may yet get a held FIN or RST on resume).
  const forgetIfDone = (link: Link) => {
    if (link.client.destroyed && (!link.upstream || link.upstream.destroyed)) links.delete(link);
  };

  const apply = (pipe: Pipe, item: Held) => {
    const to = pipe.to!;
    if (to.destroyed) return;
    if (item === 'reset') reset(to);
    else if (item === 'end') to.end();
    else if (!to.writableEnded && !to.write(item) && !pipe.draining) {
      // Backpressure: stop reading the sender until the receiver drains.
      pipe.draining = true;
      pipe.from?.pause();
      to.once('drain', () => {
        pipe.draining = false;
        pipe.from?.resume();
      });
    }
  };

  const deliver = (pipe: Pipe, item: Held) => {
    const ready = pipe.to !== null && !pipe.to.connecting;
    if (!paused && ready && pipe.held.length === 0) return apply(pipe, item);
    if (paused && mode === 'drop' && Buffer.isBuffer(item)) pipe.dropped += item.length;
    // Held: while paused, or (whatever the mode) bytes sent before any pause while the upstream is being dialled.
    else pipe.held.push(item);
  };

  const wire = (link: Link, pipe: Pipe) => {
    const from = pipe.from!;
    from.on('data', (chunk: Buffer) => deliver(pipe, chunk));
    from.on('end', () => deliver(pipe, 'end'));
    from.on('close', (hadError) => {
      deliver(pipe, hadError ? 'reset' : 'end');
      forgetIfDone(link);
    });
  };

  const flush = (link: Link) => {
    if (paused || !link.upstream || link.upstream.connecting) return;
    const pipes = [link.up, link.down];
    if (mode === 'drop' && pipes.some((pipe) => pipe.dropped > 0 || pipe.held.includes('end') || pipe.held.includes('reset'))) {
      // The stream lost bytes, or an end went away meanwhile: nothing sound can follow, reset both ends.
      for (const pipe of pipes) pipe.held = [];
      reset(link.client);
      reset(link.upstream);
    }
    for (const pipe of pipes) {
      const held = pipe.held;
      pipe.held = [];
      for (const item of held) apply(pipe, item);
    }
    forgetIfDone(link);
  };

  const dial = (link: Link) => {
    if (link.upstream) return flush(link);
    const upstream = connect({ host: options.target.host, port: options.target.port, allowHalfOpen: true });
    track(upstream);
    link.upstream = upstream;
    link.up.to = upstream;
    link.down.from = upstream;
    // A target that refuses (or goes before connecting) shows as a close with an error: the client is reset, as if it had dialled the target itself.
    wire(link, link.down);
    upstream.once('connect', () => flush(link));
  };

  const server: Server = createServer({ allowHalfOpen: true }, (client) => {
    accepted += 1;
    track(client);
    const link: Link = {
      client,
      upstream: null,
      up: { from: client, to: null, held: [], dropped: 0, draining: false },
      down: { from: null, to: client, held: [], dropped: 0, draining: false },
    };
    links.add(link);
    wire(link, link.up);
    if (!paused) dial(link);
  });
  server.on('error', () => {});

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    url: `nats://127.0.0.1:${port}`,
    get connections() {
      return [...links].filter((link) => !link.client.destroyed).length;
    },
    get accepted() {
      return accepted;
    },
    get paused() {
      return paused;
    },
    pause: () => {
      paused = true;
    },
    resume: () => {
      if (!paused) return;
      paused = false;
      for (const link of [...links]) dial(link);
    },
    cut: () => {
      for (const socket of [...sockets]) reset(socket);
      links.clear();
    },
    close: () => {
      closing ??= (async () => {
        const listening = new Promise<void>((resolve) => server.close(() => resolve()));
        const gone = [...sockets].map((socket) => new Promise<void>((resolve) => socket.once('close', () => resolve())));
        for (const socket of [...sockets]) reset(socket);
        links.clear();
        await Promise.all([listening, ...gone]);
      })();
      return closing;
    },
  };
}
