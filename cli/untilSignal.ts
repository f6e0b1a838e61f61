/**
 * Resolves at SIGINT or SIGTERM, saying what happens next. It holds the event
 * loop meanwhile: on the in-process bus nothing else would.
 */
export function untilSignal(whatNext: string): Promise<void> {
  return new Promise<void>((done) => {
    const keepAlive = setInterval(() => {}, 1 << 30);
    const shutdown = (signal: string) => {
      console.log(`${signal}: ${whatNext}`);
      process.off('SIGINT', shutdown);
      process.off('SIGTERM', shutdown);
      clearInterval(keepAlive);
      done();
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
  });
}
