// npm run check:openapi: the OpenAPI document served at /docs/openapi.json (src/http/openapi.ts, written from
// the route table) is valid OpenAPI 3.1, its refs resolve and its schemas are JSON Schema. Runs on Node.js 24,
// which strips types.
import SwaggerParser from '@apidevtools/swagger-parser';
import { openApiDocument } from '../src/http/openapi.ts';

await SwaggerParser.validate(openApiDocument('https://approvals.example.com'));
console.log('OpenAPI document: valid');
