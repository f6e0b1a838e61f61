import type { Bus, BusSubscription } from '../../domain/index.ts';
import { isInbox } from '../../bus/index.ts';

export interface EndpointStats {
  name: string;
  subject: string;
  requests: number;
  errors: number;
  lastError: string | null;
  processingNanos: number;
}

export interface ServiceIdentity {
  /** Shared by every instance of the service: `turnloom` (or the subject prefix when it differs). */
  name: string;
  /** Unique to this instance. */
  id: string;
  version: string;
  description: string;
  metadata: Record<string, string>;
  queueGroup: string;
  startedAt: Date;
}

/**
 * Answers the NATS micro-service discovery subjects (`$SRV.PING|INFO|STATS`,
 * optionally `.<name>` and `.<name>.<id>`), so `nats micro ls` and any NATS
 * tooling find the API and read its per-method counters.
 */
export function serveDiscovery(bus: Bus, identity: ServiceIdentity, endpoints: () => EndpointStats[]): BusSubscription[] {
  const base = { name: identity.name, id: identity.id, version: identity.version, metadata: identity.metadata };
  const bodies = {
    PING: () => ({ type: 'io.nats.micro.v1.ping_response', ...base }),
    INFO: () => ({
      type: 'io.nats.micro.v1.info_response',
      ...base,
      description: identity.description,
      endpoints: endpoints().map(({ name, subject }) => ({ name, subject, queue_group: identity.queueGroup, metadata: {} })),
    }),
    STATS: () => ({
      type: 'io.nats.micro.v1.stats_response',
      ...base,
      started: identity.startedAt.toISOString(),
      endpoints: endpoints().map((endpoint) => ({
        name: endpoint.name,
        subject: endpoint.subject,
        queue_group: identity.queueGroup,
        num_requests: endpoint.requests,
        num_errors: endpoint.errors,
        ...(endpoint.lastError ? { last_error: endpoint.lastError } : {}),
        processing_time: endpoint.processingNanos,
        average_processing_time: endpoint.requests ? Math.round(endpoint.processingNanos / endpoint.requests) : 0,
      })),
    }),
  };
  const subscriptions: BusSubscription[] = [];
  for (const [verb, body] of Object.entries(bodies)) {
    for (const subject of [`$SRV.${verb}`, `$SRV.${verb}.${identity.name}`, `$SRV.${verb}.${identity.name}.${identity.id}`]) {
      subscriptions.push(
        bus.subscribe(subject, (message) => {
          if (message.reply && isInbox(message.reply)) bus.publish(message.reply, new TextEncoder().encode(JSON.stringify(body())), { headers: { 'content-type': 'application/json' } });
        }),
      );
    }
  }
  return subscriptions;
}
