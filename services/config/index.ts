export { configSchema, providerKinds, builtInProviders, builtInAgents } from './configSchema.ts';
export type { TurnloomConfig, ProviderConfig, ProviderKind, AgentConfig, McpServerConfig } from './configSchema.ts';
export { loadConfig, userConfigPath, projectConfigPath, PROJECT_CONFIG_FILE } from './loadConfig.ts';
export type { LoadConfigOptions, LoadedConfig } from './loadConfig.ts';
export { mergeConfigs } from './mergeConfigs.ts';
export { projectFileRefusal } from './projectFileLimits.ts';
export { renderConfigReference, renderConfigJsonSchema } from './renderConfigReference.ts';
