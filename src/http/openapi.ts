export function openApiDocument(publicUrl: string) {
  return {
    openapi: '3.1.0',
    info: { title: 'Action Approval Service', version: '1' },
    servers: [{ url: publicUrl }],
    paths: {},
  };
}
