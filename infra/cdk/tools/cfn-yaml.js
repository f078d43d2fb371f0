// Reads a CloudFormation/SAM YAML template, short-form tags included
// (!Ref, !Sub, !GetAtt, ...), into the JSON form CloudFormation itself uses.
// Used by the stack (lib/sluice-stack.ts), the type generator
// (tools/gen-types.js) and the completeness check (tools/check-synth.js).
'use strict';
const fs = require('fs');
const YAML = require('yaml');

const FUNCTIONS = [
  'Base64', 'Cidr', 'FindInMap', 'GetAtt', 'GetAZs', 'ImportValue', 'Join', 'Select', 'Split', 'Sub',
  'Transform', 'And', 'Equals', 'If', 'Not', 'Or', 'ToJsonString', 'Length',
];

function tagsFor(name, key) {
  const scalar = (value) => {
    // `!GetAtt Cache.Endpoint.Address` is ["Cache", "Endpoint.Address"]: the logical id has no dot.
    if (name === 'GetAtt' && typeof value === 'string') {
      const dot = value.indexOf('.');
      return { [key]: dot < 0 ? [value] : [value.slice(0, dot), value.slice(dot + 1)] };
    }
    return { [key]: value };
  };
  return [
    { tag: `!${name}`, resolve: (value) => scalar(value) },
    { tag: `!${name}`, collection: 'seq', resolve: (seq) => ({ [key]: seq.toJSON() }) },
    { tag: `!${name}`, collection: 'map', resolve: (map) => ({ [key]: map.toJSON() }) },
  ];
}

const customTags = [
  ...FUNCTIONS.flatMap((name) => tagsFor(name, `Fn::${name}`)),
  ...tagsFor('Ref', 'Ref'),
  ...tagsFor('Condition', 'Condition'),
];

/**
 * @param {string} text
 * @returns {Record<string, any>}
 */
function parseCfnYaml(text) {
  const doc = YAML.parseDocument(text, { customTags, schema: 'core', uniqueKeys: true });
  if (doc.errors.length > 0) throw new Error(doc.errors.map((e) => e.message).join('\n'));
  const value = doc.toJS({ maxAliasCount: -1 });
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error('a template is a mapping');
  return value;
}

/**
 * @param {string} file a .yaml/.yml or .json template
 * @returns {Record<string, any>}
 */
function readTemplate(file) {
  const text = fs.readFileSync(file, 'utf8');
  return /\.json$/i.test(file) ? JSON.parse(text) : parseCfnYaml(text);
}

module.exports = { parseCfnYaml, readTemplate };
