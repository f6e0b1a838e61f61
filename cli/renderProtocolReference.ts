import { z } from 'zod';
import { apiHandlers } from '../services/api/apiHandlers.ts';
import { apiMethods, apiParams } from '../protocol/apiSchemas.ts';

interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  anyOf?: JsonSchema[];
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
}

function typeOf(schema: JsonSchema): string {
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(' \\| ');
  if (schema.anyOf) return schema.anyOf.map(typeOf).join(' \\| ');
  if (schema.type === 'object' && schema.properties) return `{ ${Object.keys(schema.properties).join(', ')} }`;
  return schema.type ?? 'any';
}

function notesOf(schema: JsonSchema): string {
  const notes: string[] = [];
  if (schema.description) notes.push(schema.description);
  if (schema.pattern) notes.push(`matches \`${schema.pattern}\``);
  if (schema.maxLength !== undefined) notes.push(`${schema.minLength ?? 0}–${schema.maxLength} chars`);
  if (schema.minimum !== undefined || schema.maximum !== undefined) notes.push(`${schema.minimum ?? ''}–${schema.maximum ?? ''}`);
  if (schema.default !== undefined) notes.push(`default \`${JSON.stringify(schema.default)}\``);
  for (const [name, field] of Object.entries(schema.properties ?? {})) {
    if (field.pattern || field.maxLength !== undefined) notes.push(`\`${name}\`: ${notesOf(field)}`);
  }
  return notes.join('; ');
}

/** Every method with its scope and parameters, straight from the schemas the server validates with. */
export function renderProtocolReference(): string {
  const lines: string[] = [];
  for (const method of apiMethods) {
    const schema = z.toJSONSchema(apiParams[method], { io: 'input' }) as JsonSchema;
    const scope = apiHandlers[method].scope;
    const needs = scope === 'any' ? 'any (a known token, whatever its scopes)' : scope ? `\`${scope}\`` : 'none';
    lines.push(`#### \`${method}\``, '', `Scope: ${needs}. Subject: \`<prefix>.v1.api.${method}\`.`, '');
    const fields = Object.entries(schema.properties ?? {});
    if (fields.length === 0) {
      lines.push('No parameters: send `{}`.', '');
      continue;
    }
    lines.push('| field | type | required | notes |', '|---|---|---|---|');
    for (const [name, field] of fields) {
      lines.push(`| \`${name}\` | ${typeOf(field)} | ${schema.required?.includes(name) ? 'yes' : 'no'} | ${notesOf(field)} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}
