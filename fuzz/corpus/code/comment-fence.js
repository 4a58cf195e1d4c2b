/* ```js
not a fence
``` */
const x = `
```
`;
return x.length;
