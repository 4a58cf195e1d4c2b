import fs from 'node:fs';
const m = await import('x');
return import.meta.url;
