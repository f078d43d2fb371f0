//! Where each kind of resource lives in Cafe24's Admin API, and what its
//! id is called.
//!
//! | kind     | single-resource endpoint                      | body key           | id field     |
//! |----------|-----------------------------------------------|--------------------|--------------|
//! | product  | `GET /api/v2/admin/products/{product_no}`     | `product`          | `product_no` |
//! | order    | `GET /api/v2/admin/orders/{order_id}`         | `order`            | `order_id`   |
//! | customer | `GET /api/v2/admin/customersprivacy/{member_id}` | `customersprivacy` | `member_id`  |
//!
//! Customers are the odd one: Cafe24's `/customers` is a search endpoint
//! (by `member_id` or phone, returning a list), and the one-customer read is
//! "Retrieve a customer information", `GET /customersprivacy/{member_id}`
//! (scope `mall.read_privacy`). We use that, since a webhook names exactly
//! one member.

use sluice_domain::ResourceKind;

/// The field holding a resource's last-modified time (`YYYY-MM-DDTHH:MM:SS+09:00`).
/// Cafe24 products carry it; the sandbox adds it to every kind.
pub const UPDATED_DATE_FIELD: &str = "updated_date";

/// A field only the sandbox adds: a per-resource counter that increases by
/// one on every change. `updated_date` has one-second resolution, so two
/// edits within a second look alike; tests use this to check that the
/// stored snapshot is the newest. Real Cafe24 never sends it, and the
/// client reports it only when present.
pub const SANDBOX_VERSION_FIELD: &str = "sandbox_version";

/// One resource kind as the Admin API names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdminResource {
    pub kind: ResourceKind,
    /// The path segment after `/api/v2/admin/`.
    pub path: &'static str,
    /// The key of the resource object in a single-resource response.
    pub response_key: &'static str,
    /// The id's field name, in the resource and in webhook bodies.
    pub id_field: &'static str,
    /// The same, as a webhook body path (for error messages naming it).
    pub webhook_id_path: &'static str,
}

pub const ADMIN_RESOURCES: [AdminResource; 3] = [
    AdminResource {
        kind: ResourceKind::Product,
        path: "products",
        response_key: "product",
        id_field: "product_no",
        webhook_id_path: "resource.product_no",
    },
    AdminResource {
        kind: ResourceKind::Order,
        path: "orders",
        response_key: "order",
        id_field: "order_id",
        webhook_id_path: "resource.order_id",
    },
    AdminResource {
        kind: ResourceKind::Customer,
        path: "customersprivacy",
        response_key: "customersprivacy",
        id_field: "member_id",
        webhook_id_path: "resource.member_id",
    },
];

/// The Admin API description of a kind.
pub fn admin_resource(kind: ResourceKind) -> &'static AdminResource {
    match kind {
        ResourceKind::Product => &ADMIN_RESOURCES[0],
        ResourceKind::Order => &ADMIN_RESOURCES[1],
        ResourceKind::Customer => &ADMIN_RESOURCES[2],
    }
}

/// The kind served under an Admin API path segment, e.g. `products`.
pub fn admin_resource_by_path(segment: &str) -> Option<&'static AdminResource> {
    ADMIN_RESOURCES.iter().find(|r| r.path == segment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_exactly_one_entry() {
        for kind in ResourceKind::ALL {
            let r = admin_resource(kind);
            assert_eq!(r.kind, kind);
            assert_eq!(admin_resource_by_path(r.path), Some(r));
            assert_eq!(r.webhook_id_path, format!("resource.{}", r.id_field));
        }
        assert_eq!(admin_resource_by_path("customers"), None);
    }
}
