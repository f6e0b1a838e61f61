export { ClusterNode } from './clusterNode.ts';
export type { ClusterHealth, ClusterOptions, ClusterParts } from './clusterNode.ts';
