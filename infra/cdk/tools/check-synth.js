// Checks that a synthesized stack template carries all of infra/template.yaml: every
// Parameter, Condition, Mapping, Resource (Fn::ForEach loops included) and Output, each
// as written but for what the stack changes on purpose (a parameter's Default, code
// paths turned into CDK assets); the SAM Globals as written; the Transforms in the
// template's order. Prints one line naming what is missing or changed.
//   node tools/check-synth.js [template.yaml] [synthesized.template.json]
'use strict';
const fs = require('fs');
const path = require('path');
const assert = require('assert');
const { readTemplate } = require('./cfn-yaml');

const root = path.resolve(__dirname, '..');
const sourceFile = process.argv[2] || process.env.SLUICE_TEMPLATE || path.resolve(root, '../template.yaml');
let synthFile = process.argv[3];
if (!synthFile) {
  const outdir = path.join(root, 'cdk.out');
  const manifest = JSON.parse(fs.readFileSync(path.join(outdir, 'manifest.json'), 'utf8'));
  const stacks = Object.values(manifest.artifacts || {}).filter((a) => a.type === 'aws:cloudformation:stack');
  if (stacks.length !== 1) throw new Error(`${outdir}: expected one stack, found ${stacks.length}`);
  synthFile = path.join(outdir, stacks[0].properties.templateFile);
}
const source = readTemplate(sourceFile);

// The same template as another parser read it (scripts/cdk-synth.sh passes cfn-lint's, when
// there is one): the stack and this check share tools/cfn-yaml.js, so a misreading there
// would otherwise go unseen.
if (process.env.SLUICE_DECODED) {
  const other = JSON.parse(fs.readFileSync(process.env.SLUICE_DECODED, 'utf8'));
  const paths = [];
  const walk = (a, b, at) => {
    if (JSON.stringify(a) === JSON.stringify(b)) return;
    if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
      for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) walk(a[k], b[k], `${at}.${k}`);
    } else paths.push(at.slice(1));
  };
  walk(source, other, '');
  if (paths.length) {
    console.error(`cdk-synth: tools/cfn-yaml.js reads ${sourceFile} differently from cfn-lint at ${paths.slice(0, 5).join(', ')}`);
    process.exit(1);
  }
}
const synth = JSON.parse(fs.readFileSync(synthFile, 'utf8'));

// What the stack may change: a parameter's Default (a prop), and a local CodeUri or
// DefinitionUri that became a CDK asset ({Bucket, Key}). CfnInclude writes a DependsOn
// of one logical id as a list of one, which means the same.
function expected(section, value, got) {
  if (section === 'Parameters' && got && 'Default' in got) return { ...value, Default: got.Default };
  if (section === 'Resources' && typeof value.DependsOn === 'string') value = { ...value, DependsOn: [value.DependsOn] };
  if (section !== 'Resources' || !value.Properties || !got || !got.Properties) return value;
  const properties = { ...value.Properties };
  for (const key of ['CodeUri', 'DefinitionUri']) {
    const asset = got.Properties[key];
    if (asset && typeof asset === 'object' && 'Bucket' in asset && 'Key' in asset) properties[key] = asset;
  }
  return { ...value, Properties: properties };
}

const missing = [];
const differs = [];
for (const section of ['Parameters', 'Conditions', 'Mappings', 'Resources', 'Outputs', 'Rules']) {
  for (const [id, value] of Object.entries(source[section] || {})) {
    const got = (synth[section] || {})[id];
    if (got === undefined) { missing.push(`${section}.${id}`); continue; }
    try { assert.deepStrictEqual(got, expected(section, value, got)); } catch { differs.push(`${section}.${id}`); }
  }
}
const transforms = (v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);
const want = transforms(source.Transform);
const got = transforms(synth.Transform);
if (JSON.stringify(got.slice(0, want.length)) !== JSON.stringify(want)) differs.push(`Transform (${JSON.stringify(got)}, not ${JSON.stringify(want)} first)`);
if (source.Globals !== undefined) {
  try { assert.deepStrictEqual(synth.Globals, source.Globals); } catch { differs.push('Globals (not as written)'); }
}

const rel = (f) => { const r = path.relative(process.cwd(), f); return r.startsWith('../..') ? path.resolve(f) : r; };
if (missing.length || differs.length) {
  const parts = [];
  if (missing.length) parts.push(`missing ${missing.join(', ')}`);
  if (differs.length) parts.push(`changed ${differs.join(', ')}`);
  console.error(`cdk-synth: ${rel(synthFile)} does not carry all of ${rel(sourceFile)}: ${parts.join('; ')}`);
  process.exit(1);
}
const count = (s) => Object.keys(source[s] || {}).length;
console.log(`cdk-synth: ${rel(synthFile)} carries all of ${rel(sourceFile)}: ${count('Parameters')} parameters, ${count('Resources')} resources, ${count('Outputs')} outputs, ${count('Conditions')} conditions, Globals, Transform ${want.join(' + ')}`);
