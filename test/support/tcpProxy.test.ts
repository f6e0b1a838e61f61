import { get } from 'node:http';
import { type AddressInfo, type Server, type Socket, connect as dial, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { type NatsConnection, connect } from '@nats-io/transport-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type NatsServerHandle, freePort, startNatsServer } from './natsServer.ts';
import { resourcesBeyond } from './runProgram.ts';
import { type TcpProxy, startTcpProxy } from './tcpProxy.ts';

/** An echo server that also counts what reached it: the far end of the proxy. */
async function echoServer(): Promise<{ port: number; received: () => string; accepted: () => number; open: Set<Socket>; close: () => Promise<void> }> {
  let received = '';
  let accepted = 0;
  const open = new Set<Socket>();
  const server: Server = createServer({ allowHalfOpen: true }, (socket) => {
    accepted += 1;
    open.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => open.delete(socket));
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString();
      socket.write(chunk);
    });
    socket.on('end', () => socket.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    received: () => received,
    accepted: () => accepted,
    open,
    close: async () => {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A client socket through the proxy, with what it has read and how it ended. */
async function client(port: number): Promise<{ socket: Socket; read: () => string; ended: Promise<'end' | 'reset' | 'close'> }> {
  const socket = dial({ host: '127.0.0.1', port, allowHalfOpen: true });
  let read = '';
  socket.on('data', (chunk: Buffer) => (read += chunk.toString()));
  const ended = new Promise<'end' | 'reset' | 'close'>((resolve) => {
    socket.once('end', () => resolve('end'));
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNRESET' ? 'reset' : 'close'));
    socket.once('close', () => resolve('close'));
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return { socket, read: () => read, ended };
}

const settled = <T>(promise: Promise<T>) => Promise.race([promise, sleep(300).then(() => 'pending' as const)]);

describe('test harness: TCP proxy', () => {
  let echo: Awaited<ReturnType<typeof echoServer>>;
  let proxy: TcpProxy | undefined;
  const clients: Socket[] = [];
  beforeAll(async () => {
    echo = await echoServer();
  });
  afterAll(async () => {
    await echo.close();
  });
  afterEach(async () => {
    for (const socket of clients.splice(0)) socket.destroy();
    await proxy?.close();
    proxy = undefined;
  });
  const open = async (port: number) => {
    const opened = await client(port);
    clients.push(opened.socket);
    return opened;
  };

  it('passes bytes both ways and counts its connections', async () => {
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: echo.port } });
    expect(proxy.url).toBe(`nats://127.0.0.1:${proxy.port}`);
    const a = await open(proxy.port);
    a.socket.write('hello');
    await expect.poll(a.read).toBe('hello');
    expect(proxy.connections).toBe(1);
    a.socket.end();
    expect(await a.ended).toBe('end');
    await expect.poll(() => proxy!.connections).toBe(0);
    expect(proxy.accepted).toBe(1);
  });

  it('holds bytes while paused, sockets open on both sides, and delivers them in order on resume', async () => {
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: echo.port } });
    const a = await open(proxy.port);
    a.socket.write('before;');
    await expect.poll(a.read).toBe('before;');
    const acceptedBefore = echo.accepted();
    const before = echo.received();

    proxy.pause();
    a.socket.write('one;');
    a.socket.write('two;');
    // A connection made while paused is accepted by the proxy, but the target does not see it yet.
    const b = await open(proxy.port);
    b.socket.write('late;');
    await sleep(300);
    expect(echo.received()).toBe(before);
    expect(a.read()).toBe('before;');
    expect(b.read()).toBe('');
    expect(echo.accepted()).toBe(acceptedBefore);
    expect(await settled(a.ended)).toBe('pending');
    expect(proxy.connections).toBe(2);

    proxy.resume();
    await expect.poll(a.read).toBe('before;one;two;');
    await expect.poll(b.read).toBe('late;');
    expect(echo.accepted()).toBe(acceptedBefore + 1);
  });

  it('holds a FIN from the target while paused: the client learns of it only on resume', async () => {
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: echo.port } });
    const a = await open(proxy.port);
    a.socket.write('x');
    await expect.poll(a.read).toBe('x');
    proxy.pause();
    // The target goes away (as the NATS server evicting a stale client would).
    for (const socket of echo.open) socket.end();
    await sleep(300);
    expect(await settled(a.ended)).toBe('pending');
    proxy.resume();
    expect(await a.ended).toBe('end');
  });

  it("in 'drop' mode discards while paused, then resets the connections that lost bytes; the others carry on", async () => {
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: echo.port }, pauseMode: 'drop' });
    const lossy = await open(proxy.port);
    const quiet = await open(proxy.port);
    quiet.socket.write('q;');
    await expect.poll(quiet.read).toBe('q;');
    const before = echo.received();
    proxy.pause();
    lossy.socket.write('lost;');
    await sleep(300);
    expect(echo.received()).toBe(before);
    expect(await settled(lossy.ended)).toBe('pending');
    proxy.resume();
    expect(await lossy.ended).toBe('reset');
    quiet.socket.write('again;');
    await expect.poll(quiet.read).toBe('q;again;');
    expect(echo.received()).not.toContain('lost;');
  });

  it('cut() resets every connection on both sides and keeps listening', async () => {
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: echo.port } });
    const a = await open(proxy.port);
    a.socket.write('x');
    await expect.poll(a.read).toBe('x');
    const serverSide = [...echo.open].at(-1)!;
    const serverSaw = new Promise<string | undefined>((resolve) => serverSide.once('error', (error: NodeJS.ErrnoException) => resolve(error.code)));
    proxy.cut();
    expect(await a.ended).toBe('reset');
    expect(await serverSaw).toBe('ECONNRESET');
    const b = await open(proxy.port);
    b.socket.write('y');
    await expect.poll(b.read).toBe('y');
  });

  it('resets the client when the target refuses', async () => {
    const closedPort = await freePort();
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: closedPort } });
    const a = await open(proxy.port);
    expect(await a.ended).toBe('reset');
  });

  it('close() leaves no handle behind, even with paused and never-dialled connections; twice is fine', async () => {
    const baseline = process.getActiveResourcesInfo();
    const closing = await startTcpProxy({ target: { host: '127.0.0.1', port: echo.port } });
    const a = await client(closing.port);
    a.socket.write('x');
    await expect.poll(a.read).toBe('x');
    closing.pause();
    a.socket.write('held');
    const b = await client(closing.port);
    await closing.close();
    await closing.close();
    expect(await a.ended).toBe('reset');
    expect(await b.ended).toBe('reset');
    await expect.poll(() => resourcesBeyond(baseline), { timeout: 5_000 }).toEqual([]);
  });
});

/** One connection of the server's /connz, as far as these tests read it. */
interface Connz {
  connections: Array<{ cid: number; name?: string; reason?: string }>;
}

/** GET on the server's monitoring port, without keep-alive (no socket left open). */
function monitor(port: number, path: string): Promise<Connz> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path, agent: false }, (response) => {
      let body = '';
      response.on('data', (chunk: Buffer) => (body += chunk.toString()));
      response.on('end', () => resolve(JSON.parse(body) as Connz));
    }).on('error', reject);
  });
}

describe('test harness: TCP proxy in front of a real nats-server', () => {
  const PING_INTERVAL_MS = 1_000;
  const PING_MAX = 2;
  let server: NatsServerHandle;
  let monitorPort: number;
  let responder: NatsConnection;
  /** What the responder was asked, in order. */
  let asked: string[] = [];
  let proxy: TcpProxy | undefined;
  let nc: NatsConnection | undefined;

  const start = async (pingInterval: string, pingMax: number) => {
    monitorPort = await freePort();
    server = await startNatsServer({ jetstream: false, config: `ping_interval: "${pingInterval}"\nping_max: ${pingMax}\nhttp: "127.0.0.1:${monitorPort}"\n` });
    asked = [];
    responder = await connect({ servers: server.url });
    responder.subscribe('echo', {
      callback: (_error, msg) => {
        asked.push(msg.string());
        msg.respond(msg.data);
      },
    });
    await responder.flush();
  };
  const connection = async (name: string, state = 'open') => (await monitor(monitorPort, `/connz?state=${state}`)).connections.filter((entry) => entry.name === name);

  afterEach(async () => {
    await nc?.close().catch(() => {});
    nc = undefined;
    await proxy?.close();
    proxy = undefined;
    await responder?.close();
    await server?.dispose();
  });

  it('a paused link black-holes requests; the server keeps the connection until ping_interval × ping_max, then evicts it as stale', async () => {
    await start(`${PING_INTERVAL_MS}ms`, PING_MAX);
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: server.port } });
    // The client's own pings are slow: here only the server may notice the dead link.
    nc = await connect({ servers: proxy.url, name: 'behind-proxy', pingInterval: 120_000, reconnectTimeWait: 100, maxReconnectAttempts: -1 });
    expect(new TextDecoder().decode((await nc.request('echo', 'hi', { timeout: 5_000 })).data)).toBe('hi');
    const [before] = await connection('behind-proxy');
    expect(before).toBeDefined();

    proxy.pause();
    const pausedAt = Date.now();
    await expect(nc.request('echo', 'lost', { timeout: 500 })).rejects.toThrow(/timeout/i);
    // The request timed out, yet the server still has the connection, and the client does not know anything is wrong.
    expect((await connection('behind-proxy')).map(({ cid }) => cid)).toEqual([before!.cid]);
    expect(nc.isClosed()).toBe(false);

    await expect.poll(async () => (await connection('behind-proxy')).length, { timeout: 30_000, interval: 50 }).toBe(0);
    const evictedAfter = Date.now() - pausedAt;
    const [closed] = (await connection('behind-proxy', 'closed')).filter(({ cid }) => cid === before!.cid);
    expect(closed?.reason).toBe('Stale Connection');
    console.log(`nats-server evicted the paused client ${evictedAfter} ms after pause() (ping_interval ${PING_INTERVAL_MS} ms, ping_max ${PING_MAX})`);
    // Measured: between ping_max and ping_max + 1 intervals, by the phase of the server's ping timer. Only a lower
    // bound is safe (the machine is shared); a PING sent just before pause() may already count, hence ping_max - 1.
    expect(evictedAfter).toBeGreaterThanOrEqual(PING_INTERVAL_MS * (PING_MAX - 1));
    expect(proxy.connections).toBe(1);

    // On resume the client gets the server's held FIN, reconnects through the proxy, and requests work again.
    proxy.resume();
    await expect.poll(async () => {
      try {
        return new TextDecoder().decode((await nc!.request('echo', 'back', { timeout: 1_000 })).data);
      } catch {
        return 'no answer';
      }
    }, { timeout: 30_000, interval: 100 }).toBe('back');
    const [after] = await connection('behind-proxy');
    expect(after!.cid).not.toBe(before!.cid);
  });

  it('resumed before the server gives up, the same connection carries on, and what was held arrives late', async () => {
    // Long enough (20 × 250 ms = 5 s) for the pause below to heal in time even on a loaded machine.
    await start('250ms', 20);
    proxy = await startTcpProxy({ target: { host: '127.0.0.1', port: server.port } });
    nc = await connect({ servers: proxy.url, name: 'healing', pingInterval: 120_000 });
    await nc.request('echo', 'hi', { timeout: 5_000 });
    const [before] = await connection('healing');

    proxy.pause();
    await expect(nc.request('echo', 'lost', { timeout: 500 })).rejects.toThrow(/timeout/i);
    await sleep(500);
    expect((await connection('healing')).map(({ cid }) => cid)).toEqual([before!.cid]);
    expect(asked).toEqual(['hi']);
    proxy.resume();
    // 'hold': the timed-out request was kept, not lost; it reaches the responder now (its answer finds no one waiting).
    await expect.poll(() => asked).toEqual(['hi', 'lost']);

    expect(new TextDecoder().decode((await nc.request('echo', 'healed', { timeout: 5_000 })).data)).toBe('healed');
    expect((await connection('healing')).map(({ cid }) => cid)).toEqual([before!.cid]);
    expect(proxy.accepted).toBe(1);
  });
});
