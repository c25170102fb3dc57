//! The columns of each kind's Table, as the apiserver's printers declare
//! them (names, types, priorities and descriptions `kubectl get` and
//! `-o wide` show). Split from `table` so that each kind's list stays short.

use serde_json::{json, Value};

use super::crd_columns;

fn col(name: &str, type_: &str, priority: u8, description: &str) -> Value {
    let mut c = json!({"name": name, "type": type_, "format": "", "description": description, "priority": priority});
    if name == "Name" {
        c["format"] = json!("name");
    }
    c
}

/// The columns every object's Table starts with (Name) or has (Age).
struct Common {
    name: Value,
    age: Value,
}

impl Common {
    fn new() -> Common {
        Common {
            name: col(
                "Name",
                "string",
                0,
                "Name must be unique within a namespace.",
            ),
            age: col("Age", "string", 0, "CreationTimestamp is a timestamp representing the server time when this object was created."),
        }
    }
}

/// The columns of `plural`'s Table (Name and Age for a kind without its own).
pub fn columns(plural: &str) -> Value {
    let Common { name, age } = Common::new();
    let cols = match plural {
        "pods" => pod_columns(name, age),
        "deployments" | "replicasets" | "statefulsets" | "daemonsets" | "jobs" => {
            workload_columns(plural, name, age)
        }
        "namespaces" => vec![
            name,
            col("Status", "string", 0, "The status of the namespace"),
            age,
        ],
        "nodes" => node_columns(name, age),
        "services" => service_columns(name, age),
        "configmaps" => vec![
            name,
            col("Data", "string", 0, "Data contains the configuration data."),
            age,
        ],
        "secrets" => vec![
            name,
            col(
                "Type",
                "string",
                0,
                "Used to facilitate programmatic handling of secret data.",
            ),
            col("Data", "string", 0, "Data contains the secret data."),
            age,
        ],
        "events" => event_columns(),
        "widgets" => widget_columns(name),
        "customresourcedefinitions" => vec![name, col("Created At", "date", 0, "")],
        "endpointslices" => vec![
            name,
            col("AddressType", "string", 0, "The IP protocol for this slice"),
            col("Ports", "string", 0, "The ports defined on this slice"),
            col("Endpoints", "string", 0, "Endpoints in this slice"),
            age,
        ],
        _ => vec![name, age],
    };
    Value::Array(cols)
}

fn pod_columns(name: Value, age: Value) -> Vec<Value> {
    vec![
        name,
        col("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
        col("Status", "string", 0, "The aggregate status of the containers in this pod."),
        col("Restarts", "string", 0, "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
        age,
        col("IP", "string", 1, "IP address allocated to the pod. Routable at least within the cluster."),
        col("Node", "string", 1, "NodeName is a request to schedule this pod onto a specific node."),
        col("Nominated Node", "string", 1, "nominatedNodeName is set only when this pod preempts other pods on the node."),
        col("Readiness Gates", "string", 1, "If specified, all readiness gates will be evaluated for pod readiness."),
    ]
}

/// The template's containers, images and selector the workload kinds share.
fn template_columns() -> [Value; 3] {
    [
        col(
            "Containers",
            "string",
            1,
            "Names of each container in the template.",
        ),
        col(
            "Images",
            "string",
            1,
            "Images referenced by each container in the template.",
        ),
        col("Selector", "string", 1, "Label selector for pods."),
    ]
}

fn workload_columns(plural: &str, name: Value, age: Value) -> Vec<Value> {
    let [containers, images, selector] = template_columns();
    match plural {
        "deployments" => vec![
            name,
            col("Ready", "string", 0, "Number of the pod with ready state"),
            col("Up-to-date", "integer", 0, "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
            col("Available", "integer", 0, "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
            age,
            containers,
            images,
            selector,
        ],
        "replicasets" => vec![
            name,
            col("Desired", "integer", 0, "Replicas is the number of desired replicas."),
            col("Current", "integer", 0, "Replicas is the most recently observed number of replicas."),
            col("Ready", "integer", 0, "The number of ready replicas for this replica set."),
            age,
            containers,
            images,
            selector,
        ],
        "statefulsets" => vec![name, col("Ready", "string", 0, "Number of the pod with ready state"), age, containers, images],
        "daemonsets" => vec![
            name,
            col("Desired", "integer", 0, "The total number of nodes that should be running the daemon pod."),
            col("Current", "integer", 0, "The number of nodes that are running at least 1 daemon pod."),
            col("Ready", "integer", 0, "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready."),
            col("Up-to-date", "integer", 0, "The total number of nodes that are running updated daemon pod"),
            col("Available", "integer", 0, "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available."),
            col("Node Selector", "string", 0, "NodeSelector is a selector which must be true for the pod to fit on a node."),
            age,
            containers,
            images,
            selector,
        ],
        _ => vec![
            name,
            col("Status", "string", 0, "Status of the job."),
            col("Completions", "string", 0, "The desired number of successfully finished pods the job should be run with."),
            col("Duration", "string", 0, "Time required to complete the job."),
            age,
            containers,
            images,
            selector,
        ],
    }
}

fn node_columns(name: Value, age: Value) -> Vec<Value> {
    vec![
        name,
        col("Status", "string", 0, "The status of the node"),
        col("Roles", "string", 0, "The roles of the node"),
        age,
        col("Version", "string", 0, "Kubelet Version reported by the node."),
        col("Internal-IP", "string", 1, "List of internal IPs in the node"),
        col("External-IP", "string", 1, "List of external IPs in the node"),
        col("OS-Image", "string", 1, "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy))."),
        col("Kernel-Version", "string", 1, "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64)."),
        col("Container-Runtime", "string", 1, "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2)."),
    ]
}

fn service_columns(name: Value, age: Value) -> Vec<Value> {
    vec![
        name,
        col("Type", "string", 0, "type determines how the Service is exposed."),
        col("Cluster-IP", "string", 0, "clusterIP is the IP address of the service and is usually assigned randomly."),
        col("External-IP", "string", 0, "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service."),
        col("Port(s)", "string", 0, "The list of ports that are exposed by this service."),
        age,
        col("Selector", "string", 1, "Route service traffic to pods with label keys and values matching this selector."),
    ]
}

fn event_columns() -> Vec<Value> {
    vec![
        col("Last Seen", "string", 0, "The last time this event was observed."),
        col("Type", "string", 0, "Type of this event (Normal, Warning), new types could be added in the future."),
        col("Reason", "string", 0, "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
        col("Object", "string", 0, "The object that this event is about."),
        col("Subobject", "string", 1, "The field path of the object this event is about."),
        col("Source", "string", 1, "The component reporting this event."),
        col("Message", "string", 0, "A human-readable description of the status of this operation."),
        col("First Seen", "string", 1, "The first time this event was observed."),
        col("Count", "string", 1, "The number of times this event has occurred."),
        col("Name", "string", 1, "Name must be unique within a namespace."),
    ]
}

/// Name, then the widget CRD's additionalPrinterColumns (a `date` column is
/// a string formatted as a date).
fn widget_columns(name: Value) -> Vec<Value> {
    let mut cols = vec![name];
    for c in crd_columns() {
        let mut d = col(
            c["name"].as_str().unwrap_or(""),
            c["type"].as_str().unwrap_or("string"),
            c["priority"].as_u64().unwrap_or(0) as u8,
            c["description"].as_str().unwrap_or(""),
        );
        if d["type"] == "date" {
            d["type"] = json!("string");
            d["format"] = json!("date");
        }
        cols.push(d);
    }
    cols
}
