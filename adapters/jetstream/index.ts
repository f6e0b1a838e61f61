export { ThreadLogStream } from './threadLogStream.ts';
export type { LogMessage, LogRecord, LogStreamInfo, ThreadLogOptions } from './threadLogStream.ts';
export { CasBucket } from './casBucket.ts';
export type { CasBucketOptions, Versioned } from './casBucket.ts';
