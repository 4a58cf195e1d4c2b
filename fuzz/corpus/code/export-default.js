export default async function main() {
  const r = await memory.read_graph({});
  return r.entities.map((e) => e.name);
}
