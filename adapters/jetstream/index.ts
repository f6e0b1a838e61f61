export { ThreadLogStream } from './threadLogStream.ts';
export type { LogHeader, LogMessage, LogRecord, LogStreamInfo, LogWatch, ThreadLogOptions } from './threadLogStream.ts';
export { CasBucket } from './casBucket.ts';
export type { CasBucketOptions, Versioned } from './casBucket.ts';
