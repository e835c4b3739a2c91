// kubecheck: builds each kustomization given (sigs.k8s.io/kustomize, as `kustomize build` does) and checks
// every object it outputs offline: decoded strictly into its Kubernetes Go type (an unknown or misspelt
// field, a wrong type or an unknown kind fails), then the cross-references a schema cannot see (selectors
// that match their pods, named ports that exist, ConfigMaps that exist) and this project's rules (non-root,
// read-only root file system, resources, no placeholder left). Built by `scripts/setup.sh --deploy-checks`
// from the Go module proxy; run by test/stack/deployFiles.test.ts.
//
//	kubecheck [-print] DIR...   (-print: write the built objects to stdout as YAML)
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// The kinds these manifests may hold, each with its Go type.
var kinds = map[string]func() any{
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1/Secret":                               func() any { return &corev1.Secret{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"batch/v1/Job":                            func() any { return &batchv1.Job{} },
	"batch/v1/CronJob":                        func() any { return &batchv1.CronJob{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"monitoring.coreos.com/v1/PodMonitor":     func() any { return &monitoringv1.PodMonitor{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
}

type object struct {
	id    string
	value any
}

type checker struct{ problems []string }

func (c *checker) fail(id, format string, args ...any) {
	c.problems = append(c.problems, id+": "+fmt.Sprintf(format, args...))
}

func main() {
	print := flag.Bool("print", false, "write the built objects to stdout")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: kubecheck [-print] DIR...")
		os.Exit(2)
	}
	failed := false
	for _, dir := range flag.Args() {
		out, problems := check(dir)
		if *print {
			os.Stdout.Write(out)
		}
		for _, problem := range problems {
			fmt.Fprintf(os.Stderr, "%s: %s\n", dir, problem)
		}
		if len(problems) > 0 {
			failed = true
		} else {
			fmt.Fprintf(os.Stderr, "%s: ok\n", dir)
		}
	}
	if failed {
		os.Exit(1)
	}
}

func check(dir string) ([]byte, []string) {
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, []string{"kustomize build: " + err.Error()}
	}
	out, err := resources.AsYaml()
	if err != nil {
		return nil, []string{"kustomize output: " + err.Error()}
	}
	c := &checker{}
	var objects []object
	for _, resource := range resources.Resources() {
		raw, err := resource.AsYAML()
		if err != nil {
			c.fail(resource.CurId().String(), "%v", err)
			continue
		}
		key := resource.GetApiVersion() + "/" + resource.GetKind()
		id := resource.GetKind() + "/" + resource.GetName()
		make, known := kinds[key]
		if !known {
			c.fail(id, "unknown kind %s", key)
			continue
		}
		value := make()
		if err := yaml.UnmarshalStrict(raw, value); err != nil {
			c.fail(id, "%v", err)
			continue
		}
		if bytes.Contains(raw, []byte("RUNBOOK_BASE_URL")) {
			c.fail(id, "a runbook_url still holds RUNBOOK_BASE_URL: include ../components/runbook-urls and name the base")
		}
		objects = append(objects, object{id, value})
	}
	c.crossCheck(objects)
	return out, c.problems
}

func (c *checker) meta(id string, m metav1.ObjectMeta) {
	for _, problem := range validation.IsDNS1123Subdomain(m.Name) {
		c.fail(id, "name: %s", problem)
	}
	for key, value := range m.Labels {
		for _, problem := range validation.IsQualifiedName(key) {
			c.fail(id, "label %s: %s", key, problem)
		}
		for _, problem := range validation.IsValidLabelValue(value) {
			c.fail(id, "label %s=%s: %s", key, value, problem)
		}
	}
}

func (c *checker) crossCheck(objects []object) {
	configMaps := map[string]bool{}
	var pods []corev1.PodTemplateSpec
	for _, o := range objects {
		if cm, ok := o.value.(*corev1.ConfigMap); ok {
			configMaps[cm.Name] = true
		}
	}
	for _, o := range objects {
		switch v := o.value.(type) {
		case *corev1.ConfigMap:
			c.meta(o.id, v.ObjectMeta)
		case *corev1.ServiceAccount:
			c.meta(o.id, v.ObjectMeta)
		case *appsv1.Deployment:
			c.meta(o.id, v.ObjectMeta)
			c.selects(o.id, v.Spec.Selector, v.Spec.Template.Labels)
			c.pod(o.id, v.Spec.Template.Spec, configMaps, false)
			pods = append(pods, v.Spec.Template)
		case *batchv1.Job:
			c.meta(o.id, v.ObjectMeta)
			c.pod(o.id, v.Spec.Template.Spec, configMaps, true)
		case *batchv1.CronJob:
			c.meta(o.id, v.ObjectMeta)
			if len(strings.Fields(v.Spec.Schedule)) != 5 {
				c.fail(o.id, "schedule %q is not five cron fields", v.Spec.Schedule)
			}
			c.pod(o.id, v.Spec.JobTemplate.Spec.Template.Spec, configMaps, true)
		}
	}
	for _, o := range objects {
		switch v := o.value.(type) {
		case *policyv1.PodDisruptionBudget:
			c.meta(o.id, v.ObjectMeta)
			if c.matching(o.id, v.Spec.Selector, pods) == 0 {
				c.fail(o.id, "its selector matches no pod template")
			}
		case *corev1.Service:
			c.meta(o.id, v.ObjectMeta)
			matched := matchingTemplates(labels.SelectorFromSet(v.Spec.Selector), pods)
			if len(v.Spec.Selector) == 0 || len(matched) == 0 {
				c.fail(o.id, "its selector matches no pod template")
			}
			for _, port := range v.Spec.Ports {
				if name := port.TargetPort.StrVal; name != "" && !hasPort(matched, name) {
					c.fail(o.id, "targetPort %s is no named port of its pods", name)
				}
			}
		case *monitoringv1.PodMonitor:
			c.meta(o.id, v.ObjectMeta)
			selector := v.Spec.Selector
			matched := c.matching(o.id, &selector, pods)
			if matched == 0 {
				c.fail(o.id, "its selector matches no pod template")
			}
			for _, endpoint := range v.Spec.PodMetricsEndpoints {
				name := ""
				if endpoint.Port != nil {
					name = *endpoint.Port
				}
				if name == "" || !hasPort(pods, name) {
					c.fail(o.id, "port %q is no named port of any pod", name)
				}
			}
		case *monitoringv1.PrometheusRule:
			c.meta(o.id, v.ObjectMeta)
			for _, group := range v.Spec.Groups {
				for _, rule := range group.Rules {
					if rule.Alert != "" && !strings.HasPrefix(rule.Annotations["runbook_url"], "https://") {
						c.fail(o.id, "alert %s: runbook_url %q is not an https URL", rule.Alert, rule.Annotations["runbook_url"])
					}
				}
			}
		}
	}
}

func (c *checker) selects(id string, selector *metav1.LabelSelector, podLabels map[string]string) {
	if selector == nil {
		c.fail(id, "no selector")
		return
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || s.Empty() || !s.Matches(labels.Set(podLabels)) {
		c.fail(id, "selector does not match its pod template's labels")
	}
}

func (c *checker) matching(id string, selector *metav1.LabelSelector, pods []corev1.PodTemplateSpec) int {
	if selector == nil {
		return 0
	}
	s, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		c.fail(id, "selector: %v", err)
		return 0
	}
	return len(matchingTemplates(s, pods))
}

func matchingTemplates(s labels.Selector, pods []corev1.PodTemplateSpec) []corev1.PodTemplateSpec {
	var matched []corev1.PodTemplateSpec
	for _, pod := range pods {
		if !s.Empty() && s.Matches(labels.Set(pod.Labels)) {
			matched = append(matched, pod)
		}
	}
	return matched
}

func hasPort(pods []corev1.PodTemplateSpec, name string) bool {
	for _, pod := range pods {
		for _, container := range pod.Spec.Containers {
			for _, port := range container.Ports {
				if port.Name == name {
					return true
				}
			}
		}
	}
	return false
}

// This project's rules for every pod: non-root, read-only, bounded, its references present.
func (c *checker) pod(id string, spec corev1.PodSpec, configMaps map[string]bool, job bool) {
	if job && spec.RestartPolicy != corev1.RestartPolicyNever && spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		c.fail(id, "a Job's pods need restartPolicy Never or OnFailure")
	}
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot ||
		spec.SecurityContext.RunAsUser == nil || *spec.SecurityContext.RunAsUser == 0 {
		c.fail(id, "the pod must set runAsNonRoot and a non-zero runAsUser")
	}
	if len(spec.Containers) == 0 {
		c.fail(id, "no containers")
	}
	for _, container := range spec.Containers {
		where := id + " container " + container.Name
		if container.Image == "" {
			c.fail(where, "no image")
		}
		sc := container.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			c.fail(where, "needs readOnlyRootFilesystem: true and allowPrivilegeEscalation: false")
		}
		if container.Resources.Requests.Cpu().IsZero() || container.Resources.Requests.Memory().IsZero() ||
			container.Resources.Limits.Memory().IsZero() {
			c.fail(where, "needs cpu and memory requests and a memory limit")
		}
		ports := map[string]bool{}
		for _, port := range container.Ports {
			ports[port.Name] = true
		}
		for _, probe := range []*corev1.Probe{container.StartupProbe, container.LivenessProbe, container.ReadinessProbe} {
			if probe != nil && probe.HTTPGet != nil && probe.HTTPGet.Port.StrVal != "" && !ports[probe.HTTPGet.Port.StrVal] {
				c.fail(where, "a probe names port %s, which the container does not have", probe.HTTPGet.Port.StrVal)
			}
		}
		for _, from := range container.EnvFrom {
			if from.ConfigMapRef != nil && !configMaps[from.ConfigMapRef.Name] {
				c.fail(where, "envFrom names ConfigMap %s, which is not in the build", from.ConfigMapRef.Name)
			}
		}
		for _, env := range container.Env {
			for _, problem := range validation.IsEnvVarName(env.Name) {
				c.fail(where, "env %s: %s", env.Name, problem)
			}
			if env.ValueFrom != nil && env.ValueFrom.ConfigMapKeyRef != nil && !configMaps[env.ValueFrom.ConfigMapKeyRef.Name] {
				c.fail(where, "env %s names ConfigMap %s, which is not in the build", env.Name, env.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
}
