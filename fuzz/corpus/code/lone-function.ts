async function run(): Promise<number> {
  let total = 0;
  for (const n of [1, 2, 3]) total += n;
  return total;
}
