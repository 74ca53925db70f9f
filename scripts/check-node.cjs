// First step of `npm test`: says which Node.js runs the tests, and stops at once if it is not the product's runtime.
// npm puts node_modules/.bin first on the PATH of its scripts, so `node` here is the pinned `node` devDependency
// (Node.js 24, Lambda's nodejs24.x) whatever the machine's own Node is; an install that skipped that package's
// script would fall back to the system's Node and test on the wrong runtime without this check.
const REQUIRED_MAJOR = 24;
const major = Number(process.versions.node.split('.')[0]);
process.stdout.write(`npm test on Node.js ${process.version} (${process.execPath})\n`);
if (major < REQUIRED_MAJOR) {
  process.stderr.write(
    `Node.js ${REQUIRED_MAJOR} or later is required (the product runs on Lambda's nodejs${REQUIRED_MAJOR}.x); ` +
      'run `npm ci` (it installs the pinned Node into node_modules/.bin) and start the tests with `npm test`.\n',
  );
  process.exit(1);
}
