interface Row { id: string; n?: number }
type Rows = Row[];
const rows = (await fs.list({ path: '/' })) as unknown as Rows;
const byId = new Map<string, Row>(rows.map((r) => [r.id, r]));
byId.size satisfies number;
