//! The JSON Schema drafts the converter reads, and what each one means by its keywords.
//!
//! A schema's draft is the one its `$schema` names, else [`JsonSchemaOptions::draft`].
//! Under a named draft, keywords the draft does not define are unknown to it, and ignored
//! with a warning as its specification says of unknown keywords. A schema that names no
//! draft is read as 2020-12 that also knows the older drafts' forms (`definitions`,
//! `dependencies`, array-form `items` with `additionalItems`, `$recursiveRef`).
//!
//! [`JsonSchemaOptions::draft`]: super::JsonSchemaOptions::draft

use std::fmt;

/// A JSON Schema draft.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Draft {
    /// Draft 4 (`http://json-schema.org/draft-04/schema#`).
    Draft4,
    /// Draft 6 (`http://json-schema.org/draft-06/schema#`).
    Draft6,
    /// Draft 7 (`http://json-schema.org/draft-07/schema#`).
    Draft7,
    /// Draft 2019-09 (`https://json-schema.org/draft/2019-09/schema`).
    Draft2019_09,
    /// Draft 2020-12 (`https://json-schema.org/draft/2020-12/schema`).
    #[default]
    Draft2020_12,
}

impl Draft {
    /// Every draft, oldest first.
    pub const ALL: [Draft; 5] =
        [Draft::Draft4, Draft::Draft6, Draft::Draft7, Draft::Draft2019_09, Draft::Draft2020_12];

    /// The draft a `$schema` URI names, if it names one of json-schema.org's.
    pub fn from_uri(uri: &str) -> Option<Draft> {
        let uri = uri.trim_end_matches('#');
        [
            ("draft-04", Draft::Draft4),
            ("draft-06", Draft::Draft6),
            ("draft-07", Draft::Draft7),
            ("2019-09", Draft::Draft2019_09),
            ("2020-12", Draft::Draft2020_12),
        ]
        .into_iter()
        .find(|(name, _)| uri.contains("json-schema.org") && uri.contains(name))
        .map(|(_, d)| d)
    }

    /// The draft of a short name: `4`, `draft4`, `draft-04`, `2019-09`, `draft2020-12`...
    pub fn from_name(name: &str) -> Option<Draft> {
        let n = name.trim().trim_start_matches("draft").trim_start_matches('-');
        Some(match n {
            "4" | "04" => Draft::Draft4,
            "6" | "06" => Draft::Draft6,
            "7" | "07" => Draft::Draft7,
            "2019-09" => Draft::Draft2019_09,
            "2020-12" => Draft::Draft2020_12,
            _ => return None,
        })
    }

    /// `$ref` stands for the whole schema object: keywords beside it are ignored
    /// (drafts 4 to 7), `$id` and `definitions` included.
    pub fn ref_overrides_siblings(self) -> bool {
        self <= Draft::Draft7
    }

    /// The keyword that sets a base URI: `id` in draft 4, `$id` later.
    pub fn id_keyword(self) -> &'static str {
        if self == Draft::Draft4 {
            "id"
        } else {
            "$id"
        }
    }

    /// An identifier may be a plain-name fragment (`"$id": "#foo"`), the anchor form of
    /// drafts 4 to 7; later drafts write `$anchor`.
    pub fn fragment_ids(self) -> bool {
        self <= Draft::Draft7
    }

    /// Integers are numbers written without a fraction or an exponent (`1.0` is not an
    /// integer), as draft 4's validators read `integer`; later drafts count values.
    pub fn plain_integers(self) -> bool {
        self == Draft::Draft4
    }

    /// `exclusiveMinimum`/`exclusiveMaximum` are booleans modifying `minimum`/`maximum`
    /// (draft 4); later drafts make them numbers of their own.
    pub fn boolean_exclusive_bounds(self) -> bool {
        self == Draft::Draft4
    }

    /// Whether `keyword` is one of this draft's keywords. Keywords of no draft (vendor
    /// extensions) are decided by the caller, as unknown.
    pub fn knows(self, keyword: &str) -> bool {
        let (since, until) = match keyword {
            "const" | "contains" | "propertyNames" | "examples" => (Draft::Draft6, None),
            "if" | "then" | "else" | "$comment" | "contentMediaType" | "contentEncoding"
            | "readOnly" | "writeOnly" => (Draft::Draft7, None),
            "$anchor"
            | "$defs"
            | "dependentRequired"
            | "dependentSchemas"
            | "minContains"
            | "maxContains"
            | "unevaluatedItems"
            | "unevaluatedProperties"
            | "$vocabulary"
            | "deprecated"
            | "contentSchema" => (Draft::Draft2019_09, None),
            "$recursiveRef" | "$recursiveAnchor" => {
                (Draft::Draft2019_09, Some(Draft::Draft2019_09))
            }
            "prefixItems" | "$dynamicRef" | "$dynamicAnchor" => (Draft::Draft2020_12, None),
            "id" => (Draft::Draft4, Some(Draft::Draft4)),
            "$id" => (Draft::Draft6, None),
            _ => return true,
        };
        self >= since && until.is_none_or(|u| self <= u)
    }
}

impl fmt::Display for Draft {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Draft::Draft4 => "draft-04",
            Draft::Draft6 => "draft-06",
            Draft::Draft7 => "draft-07",
            Draft::Draft2019_09 => "2019-09",
            Draft::Draft2020_12 => "2020-12",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_uris() {
        assert_eq!(Draft::from_uri("http://json-schema.org/draft-04/schema#"), Some(Draft::Draft4));
        assert_eq!(
            Draft::from_uri("https://json-schema.org/draft/2019-09/schema"),
            Some(Draft::Draft2019_09)
        );
        assert_eq!(Draft::from_uri("http://example.com/draft-07"), None);
        for d in Draft::ALL {
            assert_eq!(Draft::from_name(&d.to_string()), Some(d));
        }
        assert_eq!(Draft::from_name("draft7"), Some(Draft::Draft7));
        assert_eq!(Draft::from_name("3"), None);
    }

    #[test]
    fn keywords_by_draft() {
        assert!(!Draft::Draft4.knows("const"));
        assert!(Draft::Draft6.knows("const"));
        assert!(!Draft::Draft6.knows("if"));
        assert!(Draft::Draft2019_09.knows("$recursiveRef"));
        assert!(!Draft::Draft2020_12.knows("$recursiveRef"));
        assert!(Draft::Draft2020_12.knows("x-vendor"));
    }
}
